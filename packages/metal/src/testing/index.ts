export { FakeAgent, type FakeAgentCall, type FakeAgentOptions } from './fake-agent';
export { FakeBmc, type FakeBmcCall, type FakeBmcFailure, FakeBmcs, fakeBmcKey } from './fake-bmc';
export { CountingReloader, type MetalFixture, newMetalFixture } from './fixture';
export { FakeClusterNodes, type FakeNode } from './fake-cluster-nodes';
export { FakeFleet, type FakeFleetOptions, type FleetMachine, fakeBuildOf } from './fake-fleet';
export { ipAddrExec, standInArgs, writeDnsmasqStandIn, writeIpxeDir } from './dnsmasq-stand-in';
