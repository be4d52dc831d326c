export { type AgentOnTgtd, type AgentOnTgtdOptions, startAgentOnTgtd } from './agent-on-tgtd';
export { freeTcpPort, type RunningTgtd, type StartTgtdOptions, startTgtd, unusedControlPort } from './tgtd';
export { installTargetcliStandIn, type TargetcliStandIn } from './targetcli-stand-in';
export { type LoopXfs, mountLoopXfs } from './xfs-loop';
