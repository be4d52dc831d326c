import { AppError } from '@ironlens/core';
import {
  ACCELERATORS,
  type Accelerator,
  type DeploymentPath,
  MODEL_PATTERN,
  type StandardVllmRunRequest,
  VLLM_ARG_NAME_PATTERN,
  VLLM_ARG_VALUE_PATTERN,
  type VllmArgument,
} from '../api/deployments';
import { isDnsLabel, isDnsSubdomain } from '../shared/domain';

/**
 * A deployment as ironlens keeps it: the request, checked and normalised (defaults filled,
 * Lens' accelerator aliases resolved), plus what placement decided about how accelerators are
 * asked for. Every value that reaches a Kubernetes object is checked here, where it enters, and
 * again by the renderer.
 */
export interface DeploymentSpec {
  /** The execution id: 12 lower-case hex digits. */
  id: string;
  clusterId: string;
  /** Lens' `deployment_name` (display only). */
  name: string;
  /** The base of the objects' names (a DNS label of at most 30 characters, from the name). */
  base: string;
  namespace: string;
  model: string;
  path: DeploymentPath;
  accelerator: Accelerator;
  replicas: number;
  tensorParallelSize: number;
  prefill: { replicas: number; tensorParallelSize: number } | null;
  wideEp: { groupSize: number; dataParallelLocal: number } | null;
  storage: { type: 'local-cache' } | { type: 'model-cache'; volume: string };
  vllm: {
    maxModelLen: number;
    gpuMemoryUtilization: number;
    maxNumSeqs: number;
    maxNumBatchedTokens: number;
    enablePrefixCaching: boolean;
    enforceEager: boolean;
    arguments: VllmArgument[];
  };
  proxy: { httpProxy: string | null; httpsProxy: string | null; noProxy: string | null } | null;
  pins: { node: string | null; gpuProduct: string | null };
  /** How the model servers ask for accelerators (decided by placement: an extended resource, or a DRA claim where the nodes publish only ResourceSlices). */
  request: { kind: 'extended'; resource: string } | { kind: 'dra'; deviceClass: string } | { kind: 'none' };
  /** The cluster records an HF token secret: it is copied into the namespace and the servers read it. */
  hfToken: boolean;
}

/** The arguments ironlens sets itself: a request cannot override them. */
export const RESERVED_VLLM_ARGS = new Set([
  'port',
  'host',
  'model',
  'tensor-parallel-size',
  'max-model-len',
  'gpu-memory-utilization',
  'max-num-seqs',
  'max-num-batched-tokens',
  'enable-prefix-caching',
  'no-enable-prefix-caching',
  'enforce-eager',
  'data-parallel-size',
  'data-parallel-size-local',
  'data-parallel-address',
  'data-parallel-rpc-port',
  'data-parallel-start-rank',
  'kv-transfer-config',
  'disable-access-log-for-endpoints',
]);

const MODEL = new RegExp(MODEL_PATTERN);
const ARG_NAME = new RegExp(VLLM_ARG_NAME_PATTERN);
const ARG_VALUE = new RegExp(VLLM_ARG_VALUE_PATTERN);

/** Lens' accelerator alias keys (`hardware_profile.py`). */
export function acceleratorOf(v: string | undefined): Accelerator {
  const k = (v ?? 'nvidia').toLowerCase();
  if (['nvidia', 'cuda', 'gpu', 'nvidia_gpu'].includes(k)) return 'nvidia';
  if (['intel', 'xpu', 'intel_gpu', 'intel-xpu'].includes(k)) return 'intel';
  if (k === 'cpu') return 'cpu';
  throw new AppError('deployment_request_invalid', `accelerator must be one of ${ACCELERATORS.join(', ')}`);
}

/** `Qwen Coder 7B!` → `qwen-coder-7b`, at most 30 characters; `model` when nothing is left. */
export function baseName(name: string): string {
  const slug = name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 30)
    .replace(/-+$/g, '');
  return /^[a-z]/.test(slug) ? slug : slug ? `m-${slug}`.slice(0, 30).replace(/-+$/g, '') : 'model';
}

/** `ironlens-<id>`: each deployment lives in a namespace of its own. */
export const namespaceOf = (id: string) => `ironlens-${id}`;

/** An http(s) proxy URL for the model servers' environment (no credentials, no spaces), or null. */
function proxyUrl(field: string, v: string | undefined): string | null {
  if (v === undefined || v.trim() === '') return null;
  let u: URL;
  try {
    u = new URL(v.trim());
  } catch {
    throw new AppError('deployment_request_invalid', `${field} is not a URL`);
  }
  if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.username || u.password || /\s/.test(v.trim())) {
    throw new AppError('deployment_request_invalid', `${field} must be an http(s) URL without credentials`);
  }
  return v.trim();
}

/** Checks one argument list: grammar, no reserved name, no repeats. */
export function checkArguments(args: VllmArgument[]): VllmArgument[] {
  const seen = new Set<string>();
  for (const a of args) {
    const name = a.name.replace(/_/g, '-');
    if (!ARG_NAME.test(a.name) || !ARG_VALUE.test(a.value)) throw new AppError('deployment_request_invalid', `vllm argument ${JSON.stringify(a.name)} is not a name=value ironlens passes on`);
    if (RESERVED_VLLM_ARGS.has(name) || RESERVED_VLLM_ARGS.has(name.replace(/^no-/, ''))) throw new AppError('deployment_request_invalid', `vllm argument --${name} is set by ironlens`);
    if (seen.has(name)) throw new AppError('deployment_request_invalid', `vllm argument --${name} is given twice`);
    seen.add(name);
  }
  return args.map((a) => ({ name: a.name.replace(/_/g, '-'), value: a.value }));
}

/**
 * The request, checked and normalised (the schema already bounded every field). Throws 422
 * `deployment_request_invalid` / `storage_type_unsupported`; `lws_not_installed` is the caller's
 * (it needs the cluster).
 */
export function specFromRequest(id: string, clusterId: string, r: StandardVllmRunRequest, hfToken: boolean): Omit<DeploymentSpec, 'request'> {
  if (!/^[0-9a-f]{12}$/.test(id)) throw new Error(`execution id ${JSON.stringify(id)} is not 12 hex digits`);
  if (!MODEL.test(r.model)) throw new AppError('deployment_request_invalid', 'model must be a Hugging Face model id (org/name)');
  const path = r.path ?? 'optimized-baseline';
  const accelerator = acceleratorOf(r.accelerator);
  if (r.prefill && path !== 'pd-disaggregation' && path !== 'wide-ep') throw new AppError('deployment_request_invalid', 'prefill is for the pd-disaggregation and wide-ep paths');
  if (path === 'pd-disaggregation' && !r.prefill) throw new AppError('deployment_request_invalid', 'the pd-disaggregation path needs prefill {replicas, tensor_parallel_size}');
  if (r.wide_ep && path !== 'wide-ep') throw new AppError('deployment_request_invalid', 'wide_ep is for the wide-ep path');
  if (path === 'wide-ep' && !r.wide_ep) throw new AppError('deployment_request_invalid', 'the wide-ep path needs wide_ep {group_size, data_parallel_local}');
  if (path === 'wide-ep' && accelerator === 'cpu') throw new AppError('deployment_request_invalid', 'wide expert parallelism needs accelerators');
  if (r.gpu_product && accelerator === 'cpu') throw new AppError('deployment_request_invalid', 'gpu_product pins an accelerator');
  if (r.node !== undefined && !isDnsSubdomain(r.node)) throw new AppError('deployment_request_invalid', 'node must be a node name');
  const storageType = r.storage_type ?? 'local-cache';
  let storage: DeploymentSpec['storage'];
  if (storageType === 'local-cache') storage = { type: 'local-cache' };
  else if (storageType === 'model-cache') {
    const v = (r.storage_volume_id ?? '').trim();
    if (!isDnsSubdomain(v)) throw new AppError('deployment_request_invalid', 'storage_type model-cache needs storage_volume_id: the PersistentVolume holding the weights');
    storage = { type: 'model-cache', volume: v };
  } else {
    throw new AppError('storage_type_unsupported', 'storage_type pvc is not supported: a deployment has a namespace of its own, where a claim of another namespace cannot be mounted; use model-cache with the PersistentVolume');
  }
  const http = proxyUrl('http_proxy', r.http_proxy);
  const https = proxyUrl('https_proxy', r.https_proxy);
  const no = r.no_proxy?.trim() ? r.no_proxy.trim() : null;
  if (no !== null && !/^[A-Za-z0-9.,:*/_-]+$/.test(no)) throw new AppError('deployment_request_invalid', 'no_proxy is a comma-separated list of hosts, domains and CIDRs');
  const base = baseName(r.deployment_name);
  const namespace = namespaceOf(id);
  if (!isDnsLabel(base) || !isDnsLabel(namespace)) throw new Error('derived names are not DNS labels');
  return {
    id,
    clusterId,
    name: r.deployment_name,
    base,
    namespace,
    model: r.model,
    path,
    accelerator,
    replicas: r.replicas,
    tensorParallelSize: r.tensor_parallel_size,
    prefill: r.prefill ? { replicas: r.prefill.replicas, tensorParallelSize: r.prefill.tensor_parallel_size } : null,
    wideEp: r.wide_ep ? { groupSize: r.wide_ep.group_size, dataParallelLocal: r.wide_ep.data_parallel_local } : null,
    storage,
    vllm: {
      maxModelLen: r.max_model_len ?? 4096,
      gpuMemoryUtilization: r.gpu_memory_utilization ?? 0.9,
      maxNumSeqs: r.max_num_seqs ?? 256,
      maxNumBatchedTokens: r.max_num_batched_tokens ?? 8192,
      enablePrefixCaching: r.enable_prefix_caching ?? true,
      enforceEager: r.enforce_eager ?? false,
      arguments: checkArguments(r.vllm_arguments ?? []),
    },
    proxy: r.use_cluster_proxy === false || (http === null && https === null && no === null) ? null : { httpProxy: http, httpsProxy: https, noProxy: no },
    pins: { node: r.node ?? null, gpuProduct: r.gpu_product ?? null },
    hfToken,
  };
}

/** The pods placement must fit, per role: `count` pods each holding `devices` accelerators on one node. */
export function podGroups(s: Pick<DeploymentSpec, 'path' | 'replicas' | 'tensorParallelSize' | 'prefill' | 'wideEp' | 'accelerator'>): Array<{ role: string; count: number; devices: number }> {
  const per = (tp: number) => (s.accelerator === 'cpu' ? 0 : tp);
  if (s.path === 'wide-ep' && s.wideEp) {
    const groups = [{ role: 'decode', count: s.replicas * s.wideEp.groupSize, devices: per(s.tensorParallelSize * s.wideEp.dataParallelLocal) }];
    if (s.prefill) groups.push({ role: 'prefill', count: s.prefill.replicas * s.wideEp.groupSize, devices: per(s.prefill.tensorParallelSize * s.wideEp.dataParallelLocal) });
    return groups;
  }
  const groups = [{ role: 'decode', count: s.replicas, devices: per(s.tensorParallelSize) }];
  if (s.path === 'pd-disaggregation' && s.prefill) groups.push({ role: 'prefill', count: s.prefill.replicas, devices: per(s.prefill.tensorParallelSize) });
  return groups;
}
