/**
 * A model server as the drain tests place it on a cluster (issue 31): a two-replica Deployment
 * (one pod per node when it can), a PodDisruptionBudget of `minAvailable`, and an InferencePool
 * (Gateway API Inference Extension v1) selecting the pods by a label of its own. Objects to apply
 * with the kube-harness; the CRD comes from `upstreamInferenceExtensionCrds`.
 */
export const POOL_LABEL = 'llm-d.ai/inferenceServing';

export function modelServerObjects(namespace: string, minAvailable = 1): Array<Record<string, unknown> & { kind: string }> {
  return [
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'model', namespace },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: 'model' } },
        template: {
          metadata: { labels: { app: 'model', [POOL_LABEL]: 'true' } },
          spec: {
            affinity: { podAntiAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 100, podAffinityTerm: { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: { app: 'model' } } } }] } },
            containers: [{ name: 'vllm', image: 'stand-in/vllm:latest' }],
          },
        },
      },
    },
    modelServerBudget(namespace, minAvailable),
    {
      apiVersion: 'inference.networking.k8s.io/v1',
      kind: 'InferencePool',
      metadata: { name: 'model-pool', namespace },
      spec: { selector: { matchLabels: { [POOL_LABEL]: 'true' } }, targetPorts: [{ number: 8000 }], endpointPickerRef: { name: 'model-epp', port: { number: 9002 } } },
    },
  ];
}

export function modelServerBudget(namespace: string, minAvailable: number): Record<string, unknown> & { kind: string } {
  return { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'model-pdb', namespace }, spec: { minAvailable, selector: { matchLabels: { app: 'model' } } } };
}
