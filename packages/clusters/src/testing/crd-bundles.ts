/**
 * Small but real CRD bundles in the shape of the two pinned release assets: the groups, names
 * and `api-approved.kubernetes.io` annotations of gateway-api's `standard-install.yaml` and
 * gateway-api-inference-extension's `v1-manifests.yaml`, with trimmed schemas.
 */
function crd(group: string, kind: string, plural: string, scope: 'Namespaced' | 'Cluster', version: string, approved: string, bundleVersion: string): string {
  return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  annotations:
    api-approved.kubernetes.io: ${approved}
    bundle.ironlens.dev/version: ${bundleVersion}
  name: ${plural}.${group}
spec:
  group: ${group}
  names:
    kind: ${kind}
    listKind: ${kind}List
    plural: ${plural}
    singular: ${kind.toLowerCase()}
  scope: ${scope}
  versions:
  - name: ${version}
    served: true
    storage: true
    subresources:
      status: {}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          apiVersion:
            type: string
          kind:
            type: string
          metadata:
            type: object
          spec:
            type: object
            x-kubernetes-preserve-unknown-fields: true
          status:
            type: object
            x-kubernetes-preserve-unknown-fields: true
`;
}

export function gatewayApiBundle(version = 'v1.5.1'): string {
  const approved = 'https://github.com/kubernetes-sigs/gateway-api/pull/3328';
  return [
    '# Gateway API standard channel (trimmed test copy)',
    crd('gateway.networking.k8s.io', 'GatewayClass', 'gatewayclasses', 'Cluster', 'v1', approved, version),
    crd('gateway.networking.k8s.io', 'Gateway', 'gateways', 'Namespaced', 'v1', approved, version),
    crd('gateway.networking.k8s.io', 'HTTPRoute', 'httproutes', 'Namespaced', 'v1', approved, version),
    crd('gateway.networking.k8s.io', 'ReferenceGrant', 'referencegrants', 'Namespaced', 'v1beta1', approved, version),
  ].join('---\n');
}

export function inferenceExtensionBundle(version = 'v1.5.0'): string {
  const approved = 'https://github.com/kubernetes-sigs/gateway-api-inference-extension/pull/1173';
  return [
    crd('inference.networking.k8s.io', 'InferencePool', 'inferencepools', 'Namespaced', 'v1', approved, version),
    '',
  ].join('---\n');
}
