// Test helpers of the cluster manager for other packages' tests (never imported by production code).
export { emptyClusterAnswers, type HostileAnswer, HostileApiServer } from './hostile-api-server';
export { upstreamGatewayApiObjects } from './upstream-crd-bundles';
export { FakeHelm } from './fake-helm';
// The deployments' pod network and kubelet stand-in (issue 28), for the console's browser test.
export { PodNetwork } from './pod-network';
export { KUBELET_VERDICT_STAGE, TestKubelet } from './test-kubelet';
export { type DeploymentCluster, startDeploymentCluster } from './deployment-lab';
