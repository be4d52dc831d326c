export { startKubeCluster, gpuSeries } from './cluster.harness';
export type { KubeHarness, StartKubeClusterOptions, LoadedFixtures } from './cluster.harness';
export { ensureKubeBinaries, cachedKubeBinaries, defaultCacheRoot, checkGo } from './binaries.builder';
export type { KubeBinaries, BuildOptions } from './binaries.builder';
export { KUBERNETES_VERSION, ETCD_VERSION, KWOK_VERSION } from './versions.config';
export { FakeKubeletSummary, buildSummary } from './kubelet-summary.stand-in';
export { FakeKonnectivityServer } from './konnectivity.stand-in';
export type { SummaryPodRef, NodeUsage, ContainerLogSource } from './kubelet-summary.stand-in';
export { FakePrometheus, evaluate as evaluatePromQl } from './prometheus.stand-in';
export type { Sample } from './prometheus.stand-in';
export {
  planNodes,
  nodeObject,
  nodeCapacity,
  gpuLabels,
  deviceClasses,
  resourceSlice,
  nodeCount,
  GPU_MODELS,
  DRA_DRIVERS,
  nvidiaGpuUuid,
  nvidiaPciBusId,
} from './gpu.fixtures';
export type { FixtureSize, FixtureNode, GpuModel } from './gpu.fixtures';
export { crdBundle, jsonSize, BUNDLE_GROUP } from './crd-bundle.fixture';
export { RawApplyClient, ApiError } from './raw-apply.client';
export { Pki } from './pki.generator';
export type { CertPair, LeafSpec } from './pki.generator';
export type { ApplyTarget } from './raw-apply.client';
