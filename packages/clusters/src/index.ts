// The cluster manager (seed 000): cluster registration and llm-d preparation (this folder)
// and the Kubespray bootstrap over SSH (./bootstrap).
export * from './bootstrap';
export { clustersMigrations } from './repositories/clusters.migrations';
export type { ClustersDatabase } from './repositories/tables';
export { type ClusterServices, type ClusterServicesDeps, type ClustersConfig, clustersConfigFromEnv, createClusterServices, CLUSTER_JOB_KINDS } from './wiring';
export { clustersPlugin, type ClustersPluginOptions } from './plugin';
export { PROBLEM_CONTENT_TYPE, type ProblemBody, problemErrorOptions, problemValidation, renderProblem } from './http/problem';
export { loadStackProfile, STACK_PROFILE_PATH, type StackProfile, stackProfile } from './profile';
export type { ClusterService, RegisterClusterInput } from './services/cluster.service';
export type { ClusterRecord, ProxyConfig, HfTokenSecretRef } from './domain';
export { type Kube, type KubeConnector, ClientNodeKube, clientNodeConnector, KubeApiError, KubeUnreachableError, preloadKubeClient } from './adapters/kube.adapter';
// Response and request shapes for clients; the web console imports them as types only.
export type { ComponentStatus, Hardware, OverviewNode, OverviewResponse } from './services/overview.service';
export type { CordonResult, KubernetesVersionCheck } from './services/platform.service';
export type { PrepullStatus } from './services/software.service';
export type { BundleId, BundleResult } from './services/crds.service';
export type { DownloadStatus, SoftwareDownloadStatus } from './domain';
export type { BootstrapStartRequest, BootstrapSummary, HostKeyItem } from './bootstrap/bootstrap.service';
export type { PreflightCheck, PreflightItem, PreflightResult } from './bootstrap/preflight.service';
export type { BootstrapNodeInput, HostKeyPin, NodeRole } from './bootstrap/nodes';
export type { BootstrapProxy } from './bootstrap/inventory';
export type { ClusterSettingsUpdateBody } from './routes/schemas';
// Issue 31: the registered clusters' nodes, for the boot control plane's rollouts (metal's `ClusterNodes` port).
export { KubeClusterNodes, type NodeClusters, selectorMatches } from './nodes/cluster-nodes.service';
export { createClusterNodes, type ClusterNodesDeps } from './nodes/cluster-nodes.wiring';
