// The cluster manager (seed 000): cluster registration and llm-d preparation (this folder)
// and the Kubespray bootstrap over SSH (./bootstrap).
export * from './bootstrap';
export { clustersMigrations } from './shared/clusters.migrations';
export type { ClustersDatabase } from './shared/tables';
export { type ClusterServices, type ClusterServicesDeps, createClusterServices, CLUSTER_JOB_KINDS } from './wiring';
export { type ClustersConfig, clustersConfigFromEnv } from './shared/config';
export { clustersPlugin, type ClustersPluginOptions } from './plugin';
export { PROBLEM_CONTENT_TYPE, type ProblemBody, problemErrorOptions, problemValidation, renderProblem } from './shared/http-problem';
export { loadStackProfile, STACK_PROFILE_PATH, type StackProfile, stackProfile } from './shared/profile';
export type { ClusterService, RegisterClusterInput } from './registry/cluster.service';
export type { ClusterRecord, ProxyConfig, HfTokenSecretRef } from './shared/domain';
export type { WorkerInventory } from './deployments/deployment.service';
export type { ReportedWorker } from './deployments/placement';
export { type Kube, type KubeConnector, ClientNodeKube, clientNodeConnector, KubeApiError, KubeUnreachableError, preloadKubeClient } from './adapters/kube.adapter';
// Response and request shapes for clients; the web console imports them as types only.
export type { ComponentStatus, Hardware, OverviewNode, OverviewResponse } from './overview/overview.service';
export type { CordonResult, KubernetesVersionCheck } from './overview/platform.service';
export type { PrepullStatus } from './software/prepull.service';
export type { BundleId, BundleResult } from './software/crds.service';
export type { DownloadStatus, SoftwareDownloadStatus } from './shared/domain';
export type { BootstrapStartRequest, BootstrapSummary, HostKeyItem } from './bootstrap/bootstrap.service';
export type { PreflightCheck, PreflightItem, PreflightResult } from './bootstrap/preflight.service';
export type { BootstrapNodeInput, HostKeyPin, NodeRole } from './bootstrap/nodes';
export type { BootstrapProxy } from './bootstrap/inventory';
export type { ClusterSettingsUpdateBody } from './api/clusters';
// Issue 31: the registered clusters' nodes, for the boot control plane's rollouts (metal's `ClusterNodes` port).
export { KubeClusterNodes, type NodeClusters, selectorMatches } from './nodes/cluster-nodes.service';
export { createClusterNodes, type ClusterNodesDeps } from './nodes/cluster-nodes.wiring';
