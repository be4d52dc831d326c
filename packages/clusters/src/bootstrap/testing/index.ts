// Test helpers for the bootstrap (real sshd, a smart-HTTP git server, the stand-in Kubespray),
// exported as `@ironlens/clusters/bootstrap-testing` for other packages' end-to-end tests.
// Production code never imports this module.
export { GitHttpServer, makeBareRepo } from './git-server';
export { processesMentioning, publishStandInKubespray, standInControl, Tarpit } from './harness';
export { newKey, randomLoopbackPrefix, requireTool, sshKeygenFingerprint, TestSshd } from './sshd';
