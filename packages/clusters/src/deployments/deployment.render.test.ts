import { describe, expect, it } from 'vitest';
import type { StackProfile } from '../shared/profile';
import { renderDeployment } from './deployment.render';
import { type DeploymentSpec, specFromRequest } from './deployment.spec';

// What a deployment applies, compared with literal manifests (issue 28).

const profile = {
  llm_d: 'v0.10.0',
  min_k8s_version: 'v1.32.0',
  llm_d_router: 'v0.11.0',
  llm_d_lensmark: 'v0.8.0',
  llm_d_inference_payload_processor: 'v0.1.0',
  k8s_gateway_api: 'v1.5.1',
  k8s_gateway_api_inference_extension: 'v1.5.0',
  gateway_providers: { istio: '1.29.4', envoy_gateway: 'v1.8.1', envoy_ai_gateway: 'v0.7.0', agentgateway: 'v1.5.0' },
} as StackProfile;

const gateway = { provider: 'envoy-ai-gateway' as const, namespace: 'lens-gateway-c0ffee00', gatewayName: 'lens-gateway' };

function spec(over: Partial<DeploymentSpec> = {}): DeploymentSpec {
  const base = specFromRequest(
    'a1b2c3d4e5f6',
    'c0ffee00',
    { model: 'Qwen/Qwen3-0.6B', deployment_name: 'Qwen small!', replicas: 2, tensor_parallel_size: 1, vllm_arguments: [{ name: 'max_lora_rank', value: '16' }, { name: 'enable-lora', value: 'true' }] },
    true,
  );
  return { ...base, request: { kind: 'extended', resource: 'nvidia.com/gpu' }, ...over };
}

const labels = { 'app.kubernetes.io/managed-by': 'ironlens', 'ironlens.dev/cluster': 'c0ffee00', 'ironlens.dev/deployment': 'a1b2c3d4e5f6' };

describe('renderDeployment', () => {
  it('the optimized baseline: namespace, model servers, their Service, the pool chart, and the publication on the gateway', () => {
    const r = renderDeployment(spec(), profile, gateway);
    expect(r.namespace).toEqual({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ironlens-a1b2c3d4e5f6', labels } });
    const podLabels = {
      ...labels,
      'app.kubernetes.io/instance': 'qwen-small',
      'llm-d.ai/guide': 'optimized-baseline',
      'llm-d.ai/model': 'Qwen3-0.6B',
      'llm-d.ai/accelerator-variant': 'gpu',
      'llm-d.ai/accelerator-vendor': 'nvidia',
      'llm-d.ai/inference-serving': 'true',
      'llm-d.ai/role': 'decode',
    };
    expect(r.objects).toEqual([
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'qwen-small-decode', namespace: 'ironlens-a1b2c3d4e5f6', labels: { ...labels, 'llm-d.ai/role': 'decode' } },
        spec: {
          replicas: 2,
          progressDeadlineSeconds: 1800,
          selector: { matchLabels: { 'ironlens.dev/deployment': 'a1b2c3d4e5f6', 'llm-d.ai/role': 'decode' } },
          template: {
            metadata: { labels: podLabels },
            spec: {
              enableServiceLinks: false,
              terminationGracePeriodSeconds: 30,
              containers: [
                {
                  name: 'vllm',
                  image: 'ghcr.io/llm-d/llm-d-cuda:v0.10.0',
                  imagePullPolicy: 'IfNotPresent',
                  command: ['vllm', 'serve'],
                  args: [
                    'Qwen/Qwen3-0.6B',
                    '--port=8000',
                    '--tensor-parallel-size=1',
                    '--max-model-len=4096',
                    '--gpu-memory-utilization=0.9',
                    '--max-num-seqs=256',
                    '--max-num-batched-tokens=8192',
                    '--enable-prefix-caching',
                    '--disable-access-log-for-endpoints=/health,/metrics,/v1/models',
                    '--max-lora-rank=16',
                    '--enable-lora',
                  ],
                  env: [
                    { name: 'HF_HOME', value: '/model-cache' },
                    { name: 'HF_TOKEN', valueFrom: { secretKeyRef: { name: 'llm-d-hf-token', key: 'HF_TOKEN' } } },
                  ],
                  ports: [{ name: 'http', containerPort: 8000 }],
                  startupProbe: { httpGet: { path: '/v1/models', port: 8000 }, initialDelaySeconds: 15, periodSeconds: 30, failureThreshold: 120 },
                  livenessProbe: { httpGet: { path: '/health', port: 8000 }, periodSeconds: 10 },
                  readinessProbe: { httpGet: { path: '/v1/models', port: 8000 }, periodSeconds: 5 },
                  resources: { limits: { 'nvidia.com/gpu': '1' }, requests: { 'nvidia.com/gpu': '1' } },
                  volumeMounts: [
                    { name: 'shm', mountPath: '/dev/shm' },
                    { name: 'model-cache', mountPath: '/model-cache' },
                  ],
                },
              ],
              volumes: [
                { name: 'shm', emptyDir: { medium: 'Memory', sizeLimit: '20Gi' } },
                { name: 'model-cache', emptyDir: {} },
              ],
              tolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }],
            },
          },
        },
      },
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'qwen-small-decode', namespace: 'ironlens-a1b2c3d4e5f6', labels },
        spec: { selector: { 'ironlens.dev/deployment': 'a1b2c3d4e5f6', 'llm-d.ai/role': 'decode' }, ports: [{ name: 'http', port: 8000, targetPort: 8000, protocol: 'TCP' }] },
      },
    ]);
    expect(r.release).toEqual({
      release: 'qwen-small',
      chart: 'inferencepool',
      version: 'v1.5.0',
      namespace: 'ironlens-a1b2c3d4e5f6',
      values: {
        inferenceExtension: {
          image: { registry: 'ghcr.io/llm-d', repository: 'llm-d-router-endpoint-picker', tag: 'v0.11.0', pullPolicy: 'IfNotPresent' },
          flags: { v: 1, 'kv-cache-usage-percentage-metric': 'vllm:kv_cache_usage_perc' },
        },
        inferencePool: { targetPorts: [{ number: 8000 }], modelServerType: 'vllm', modelServerProtocol: 'http', modelServers: { matchLabels: { 'ironlens.dev/deployment': 'a1b2c3d4e5f6', 'llm-d.ai/inference-serving': 'true' } } },
        provider: { name: 'none' },
      },
    });
    expect(r.publication).toEqual([
      {
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'HTTPRoute',
        metadata: { name: 'ilm-a1b2c3d4e5f6', namespace: 'lens-gateway-c0ffee00', labels },
        spec: {
          parentRefs: [{ group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'lens-gateway', namespace: 'lens-gateway-c0ffee00' }],
          rules: [
            {
              matches: [{ path: { type: 'PathPrefix', value: '/' }, headers: [{ type: 'Exact', name: 'X-Gateway-Base-Model-Name', value: 'Qwen/Qwen3-0.6B' }] }],
              backendRefs: [{ group: 'inference.networking.k8s.io', kind: 'InferencePool', name: 'qwen-small', namespace: 'ironlens-a1b2c3d4e5f6' }],
              timeouts: { request: '300s' },
            },
          ],
        },
      },
      {
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'ReferenceGrant',
        metadata: { name: 'ilm-a1b2c3d4e5f6-pool-grant', namespace: 'ironlens-a1b2c3d4e5f6', labels },
        spec: {
          from: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: 'lens-gateway-c0ffee00' }],
          to: [{ group: 'inference.networking.k8s.io', kind: 'InferencePool', name: 'qwen-small' }],
        },
      },
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'ilm-a1b2c3d4e5f6-model-map', namespace: 'lens-gateway-c0ffee00', labels: { ...labels, 'inference.llm-d.ai/ipp-managed': 'true' } },
        data: { baseModel: 'Qwen/Qwen3-0.6B', adapters: '' },
      },
    ]);
    expect(r.workloads).toEqual([{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'qwen-small-decode', role: 'decode', pods: 2 }]);
    expect(r.pool).toEqual({ name: 'qwen-small', namespace: 'ironlens-a1b2c3d4e5f6' });
    expect(r.route).toEqual({ name: 'ilm-a1b2c3d4e5f6', namespace: 'lens-gateway-c0ffee00' });
  });

  it('P/D: prefill servers, decode behind the routing sidecar (a native sidecar on 8000, vLLM on 8200), NIXL both ways, the P/D picker', () => {
    const s = spec({ path: 'pd-disaggregation', prefill: { replicas: 3, tensorParallelSize: 1 }, tensorParallelSize: 2, hfToken: false, vllm: { ...spec().vllm, arguments: [] } });
    const r = renderDeployment(s, profile, gateway);
    const [decode, prefill] = r.objects as unknown as Array<{ metadata: { name: string }; spec: { replicas: number; template: { spec: Record<string, unknown> } } }>;
    expect(decode.metadata.name).toBe('qwen-small-decode');
    expect(prefill.metadata.name).toBe('qwen-small-prefill');
    expect(prefill.spec.replicas).toBe(3);
    const d = decode.spec.template.spec as { initContainers: unknown[]; containers: Array<Record<string, unknown>> };
    expect(d.initContainers).toEqual([
      {
        name: 'routing-proxy',
        image: 'ghcr.io/llm-d/llm-d-router-disagg-sidecar:v0.11.0',
        imagePullPolicy: 'IfNotPresent',
        restartPolicy: 'Always',
        args: ['--port=8000', '--model-server-port=8200', '--kv-connector=nixlv2', '--secure-proxy=false'],
        ports: [{ name: 'http', containerPort: 8000 }],
        securityContext: { allowPrivilegeEscalation: false, runAsNonRoot: true },
      },
    ]);
    expect(d.containers[0].args).toEqual([
      'Qwen/Qwen3-0.6B',
      '--port=8200',
      '--tensor-parallel-size=2',
      '--max-model-len=4096',
      '--gpu-memory-utilization=0.9',
      '--max-num-seqs=256',
      '--max-num-batched-tokens=8192',
      '--enable-prefix-caching',
      '--disable-access-log-for-endpoints=/health,/metrics,/v1/models',
      '--kv-transfer-config={"kv_connector":"NixlConnector","kv_role":"kv_both"}',
    ]);
    expect(d.containers[0].ports).toEqual([
      { name: 'vllm', containerPort: 8200 },
      { name: 'nixl', containerPort: 5600 },
    ]);
    expect(d.containers[0].env).toEqual([
      { name: 'HF_HOME', value: '/model-cache' },
      { name: 'VLLM_NIXL_SIDE_CHANNEL_HOST', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
    ]);
    const p = prefill.spec.template.spec as { initContainers?: unknown; containers: Array<Record<string, unknown>> };
    expect(p.initContainers).toBeUndefined();
    expect(p.containers[0].env).toEqual([
      { name: 'HF_HOME', value: '/model-cache' },
      { name: 'VLLM_NIXL_SIDE_CHANNEL_HOST', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
      { name: 'VLLM_HTTP_TIMEOUT_KEEP_ALIVE', value: '120' },
    ]);
    expect(p.containers[0].resources).toEqual({ limits: { 'nvidia.com/gpu': '1' }, requests: { 'nvidia.com/gpu': '1' } });
    const ext = (r.release!.values as { inferenceExtension: Record<string, unknown> }).inferenceExtension;
    expect(ext.pluginsConfigFile).toBe('ironlens-pd.yaml');
    expect(Object.keys(ext.pluginsCustomConfig as object)).toEqual(['ironlens-pd.yaml']);
    expect((ext.pluginsCustomConfig as Record<string, string>)['ironlens-pd.yaml']).toContain('type: always-disagg-pd-decider');
    expect(r.workloads.map((w) => `${w.kind}/${w.name} ${w.pods}`)).toEqual(['Deployment/qwen-small-decode 2', 'Deployment/qwen-small-prefill 3']);
  });

  it('wide-EP: a LeaderWorkerSet per role, ranks on the pool’s target ports, the start rank from the group’s worker index (a constant script, values as arguments)', () => {
    const s = spec({ path: 'wide-ep', replicas: 1, tensorParallelSize: 1, wideEp: { groupSize: 2, dataParallelLocal: 4 }, hfToken: false, vllm: { ...spec().vllm, arguments: [] } });
    const r = renderDeployment(s, profile, gateway);
    const lws = r.objects[0] as unknown as { apiVersion: string; kind: string; spec: { replicas: number; leaderWorkerTemplate: { size: number; workerTemplate: { spec: { containers: Array<{ command: string[]; args: string[]; resources: unknown }>; initContainers: Array<{ args: string[]; ports: unknown }> } } } } };
    expect([lws.apiVersion, lws.kind, lws.spec.replicas, lws.spec.leaderWorkerTemplate.size]).toEqual(['leaderworkerset.x-k8s.io/v1', 'LeaderWorkerSet', 1, 2]);
    const c = lws.spec.leaderWorkerTemplate.workerTemplate.spec.containers[0];
    expect(c.command).toEqual(['/bin/sh', '-c', 'exec vllm serve "$@" --data-parallel-address="$LWS_LEADER_ADDRESS" --data-parallel-start-rank="$((LWS_WORKER_INDEX * DP_SIZE_LOCAL))"', 'vllm']);
    expect(c.args.slice(-5)).toEqual(['--data-parallel-size=8', '--data-parallel-size-local=4', '--data-parallel-rpc-port=5555', '--enable-expert-parallel', '--data-parallel-multi-port-external-lb']);
    expect(c.resources).toEqual({ limits: { 'nvidia.com/gpu': '4' }, requests: { 'nvidia.com/gpu': '4' } });
    const sidecar = lws.spec.leaderWorkerTemplate.workerTemplate.spec.initContainers[0];
    expect(sidecar.args).toEqual(['--port=8000', '--model-server-port=8200', '--kv-connector=nixlv2', '--secure-proxy=false', '--data-parallel-size=4']);
    expect(sidecar.ports).toEqual([0, 1, 2, 3].map((i) => ({ name: `rank${i}`, containerPort: 8000 + i })));
    expect((r.release!.values as { inferencePool: { targetPorts: unknown } }).inferencePool.targetPorts).toEqual([{ number: 8000 }, { number: 8001 }, { number: 8002 }, { number: 8003 }]);
    expect(r.workloads).toEqual([{ apiVersion: 'leaderworkerset.x-k8s.io/v1', kind: 'LeaderWorkerSet', name: 'qwen-small-decode', role: 'decode', pods: 2 }]);
    // Not the LeaderWorkerSet's name: its controller's headless Service (its leader's DNS name) is that one.
    expect(r.service).toEqual({ name: 'qwen-small-decode-http', port: 8000 });
    expect(r.objects.filter((o) => o.kind === 'Service').map((o) => o.metadata.name)).toEqual(['qwen-small-decode-http']);
  });

  it('Intel by DRA: a ResourceClaimTemplate of TP devices (a product pin as its CEL selector), the XPU image; a node pin as a node selector', () => {
    const s = spec({ accelerator: 'intel', request: { kind: 'dra', deviceClass: 'gpu.intel.com' }, tensorParallelSize: 2, pins: { node: 'gpu-xe-0', gpuProduct: 'Max_1550' }, hfToken: false });
    const r = renderDeployment(s, profile, gateway);
    expect(r.objects[0]).toEqual({
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceClaimTemplate',
      metadata: { name: 'qwen-small-decode-accelerators', namespace: 'ironlens-a1b2c3d4e5f6', labels },
      spec: { spec: { devices: { requests: [{ name: 'accelerators', exactly: { deviceClassName: 'gpu.intel.com', count: 2, selectors: [{ cel: { expression: 'device.attributes["gpu.intel.com"].productName == "Max_1550"' } }] } }] } } },
    });
    const pod = (r.objects[1] as unknown as { spec: { template: { spec: Record<string, unknown> } } }).spec.template.spec as { containers: Array<{ image: string; resources: unknown }>; resourceClaims: unknown; nodeSelector: unknown; tolerations: unknown };
    expect(pod.containers[0].image).toBe('ghcr.io/llm-d/llm-d-xpu:v0.10.0');
    expect(pod.containers[0].resources).toEqual({ claims: [{ name: 'accelerators' }] });
    expect(pod.resourceClaims).toEqual([{ name: 'accelerators', resourceClaimTemplateName: 'qwen-small-decode-accelerators' }]);
    expect(pod.nodeSelector).toEqual({ 'kubernetes.io/hostname': 'gpu-xe-0' });
  });

  it('the baseline path: no chart, nothing on the gateway; a model cache from a PersistentVolume, read-only and offline', () => {
    const s = spec({ path: 'baseline', storage: { type: 'model-cache', volume: 'qwen-weights' }, hfToken: false, pins: { node: null, gpuProduct: 'NVIDIA-L4' } });
    const r = renderDeployment(s, profile, gateway);
    expect(r.release).toBeNull();
    expect(r.publication).toEqual([]);
    expect(r.objects[0]).toEqual({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'qwen-small-model-cache', namespace: 'ironlens-a1b2c3d4e5f6', labels },
      spec: { accessModes: ['ReadOnlyMany'], storageClassName: '', volumeName: 'qwen-weights', resources: { requests: { storage: '1Gi' } } },
    });
    const pod = (r.objects[1] as unknown as { spec: { template: { spec: Record<string, unknown> } } }).spec.template.spec as { containers: Array<{ env: unknown }>; volumes: unknown[]; nodeSelector: unknown };
    expect(pod.containers[0].env).toEqual([
      { name: 'HF_HOME', value: '/model-cache' },
      { name: 'HF_HUB_OFFLINE', value: '1' },
    ]);
    expect(pod.volumes[1]).toEqual({ name: 'model-cache', persistentVolumeClaim: { claimName: 'qwen-small-model-cache', readOnly: true } });
    expect(pod.nodeSelector).toEqual({ 'nvidia.com/gpu.product': 'NVIDIA-L4' });
  });

  it('refuses values outside their grammar at the renderer too (a spec that bypassed the request checks)', () => {
    expect(() => renderDeployment(spec({ model: 'Qwen/x --trust-remote-code' }), profile, gateway)).toThrow(/model .* out of grammar/);
    expect(() => renderDeployment(spec({ vllm: { ...spec().vllm, arguments: [{ name: 'port', value: '1' }] } }), profile, gateway)).toThrow(/set by ironlens/);
    expect(() => renderDeployment(spec({ base: 'Bad_Name' }), profile, gateway)).toThrow(/names out of grammar/);
    expect(() => renderDeployment(spec({ pins: { node: 'n; rm -rf', gpuProduct: null } }), profile, gateway)).toThrow(/node pin/);
    expect(() => renderDeployment(spec(), profile, { ...gateway, namespace: 'x/y' })).toThrow(/gateway names/);
  });
});

describe('specFromRequest', () => {
  const req = { model: 'Qwen/Qwen3-0.6B', deployment_name: 'q', replicas: 1, tensor_parallel_size: 1 };
  it('resolves Lens’ accelerator aliases and refuses what ironlens sets itself or cannot mount', () => {
    expect(specFromRequest('a1b2c3d4e5f6', 'c0ffee00', { ...req, accelerator: 'xpu' }, false).accelerator).toBe('intel');
    expect(specFromRequest('a1b2c3d4e5f6', 'c0ffee00', { ...req, accelerator: 'cuda' }, false).accelerator).toBe('nvidia');
    expect(() => specFromRequest('a1b2c3d4e5f6', 'c0ffee00', { ...req, vllm_arguments: [{ name: 'tensor_parallel_size', value: '8' }] }, false)).toThrow(/set by ironlens/);
    expect(() => specFromRequest('a1b2c3d4e5f6', 'c0ffee00', { ...req, storage_type: 'pvc', pvc_name: 'x' }, false)).toThrow(expect.objectContaining({ code: 'storage_type_unsupported' }));
    expect(() => specFromRequest('a1b2c3d4e5f6', 'c0ffee00', { ...req, path: 'pd-disaggregation' }, false)).toThrow(/needs prefill/);
    expect(() => specFromRequest('a1b2c3d4e5f6', 'c0ffee00', { ...req, http_proxy: 'http://u:p@proxy:3128' }, false)).toThrow(/without credentials/);
  });
});
