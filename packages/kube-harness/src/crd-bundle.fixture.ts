/**
 * A realistically large CRD bundle, generated, shaped like the Gateway API's
 * standard install: several CRDs, two served versions each, deep structural
 * schemas with long descriptions, enums, bounds and CEL rules. The largest CRD
 * serializes to well over 262,144 bytes, which is why these bundles must be
 * applied server-side: a client-side `kubectl apply` stores the whole object in
 * the `kubectl.kubernetes.io/last-applied-configuration` annotation, and the API
 * server rejects annotations totalling more than 262,144 bytes
 * ("metadata.annotations: Too long: may not be more than 262144 bytes").
 */

export const BUNDLE_GROUP = 'gateway.fixtures.ironlens.dev';

type Schema = Record<string, unknown>;

const LOREM =
  'This field follows the conventions of the Kubernetes API: it is optional unless stated otherwise, ' +
  'an implementation MUST reject values outside the documented bounds, and a controller that does not ' +
  'support it MUST set the Accepted condition of the owning object to False with reason UnsupportedValue. ' +
  'Support: Core for the fields marked as such, Extended for the rest, Implementation-specific otherwise.';

function desc(path: string): string {
  return `${path}: ${LOREM}`;
}

function str(path: string, extra: Schema = {}): Schema {
  return { type: 'string', description: desc(path), maxLength: 253, ...extra };
}

/** A nested object tree; `depth` levels, `breadth` fields each. Deterministic. */
function tree(path: string, depth: number, breadth: number): Schema {
  const properties: Record<string, Schema> = {};
  for (let i = 0; i < breadth; i++) {
    const name = `${['match', 'filter', 'backend', 'policy', 'header', 'query', 'timeout', 'retry'][i % 8]}${i}`;
    const p = `${path}.${name}`;
    if (depth > 0 && i % 3 === 0) {
      properties[name] = tree(p, depth - 1, breadth);
    } else if (depth > 0 && i % 3 === 1) {
      properties[name] = { type: 'array', description: desc(p), maxItems: 16, items: tree(`${p}[]`, depth - 1, Math.max(2, breadth - 2)) };
    } else if (i % 4 === 2) {
      properties[name] = str(p, { enum: ['Exact', 'PathPrefix', 'RegularExpression', 'ImplementationSpecific'], default: 'Exact' });
    } else if (i % 4 === 3) {
      properties[name] = { type: 'integer', format: 'int32', minimum: 0, maximum: 65535, description: desc(p) };
    } else {
      properties[name] = str(p, { pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$' });
    }
  }
  return { type: 'object', description: desc(path), properties };
}

function routeSchema(kind: string, depth: number, breadth: number): Schema {
  return {
    type: 'object',
    description: `${kind} provides a way to route requests. ${LOREM}`,
    properties: {
      apiVersion: { type: 'string', description: 'APIVersion defines the versioned schema of this representation of an object.' },
      kind: { type: 'string', description: 'Kind is a string value representing the REST resource this object represents.' },
      metadata: { type: 'object' },
      spec: {
        type: 'object',
        description: desc(`${kind}.spec`),
        properties: {
          hostnames: { type: 'array', maxItems: 16, items: str('spec.hostnames[]', { maxLength: 253 }), description: desc('spec.hostnames') },
          parentRefs: {
            type: 'array',
            maxItems: 32,
            description: desc('spec.parentRefs'),
            items: {
              type: 'object',
              required: ['name'],
              properties: {
                group: str('spec.parentRefs[].group', { default: BUNDLE_GROUP }),
                kind: str('spec.parentRefs[].kind', { default: 'Gateway' }),
                name: str('spec.parentRefs[].name'),
                namespace: str('spec.parentRefs[].namespace'),
                sectionName: str('spec.parentRefs[].sectionName'),
                port: { type: 'integer', format: 'int32', minimum: 1, maximum: 65535 },
              },
            },
          },
          rules: {
            type: 'array',
            maxItems: 16,
            description: desc('spec.rules'),
            items: tree('spec.rules[]', depth, breadth),
          },
        },
        'x-kubernetes-validations': [
          { rule: 'size(self.hostnames) <= 16', message: 'at most 16 hostnames' },
          { rule: '!has(self.parentRefs) || self.parentRefs.all(p, size(p.name) > 0)', message: 'parentRefs need a name' },
        ],
      },
      status: {
        type: 'object',
        description: desc(`${kind}.status`),
        properties: {
          parents: {
            type: 'array',
            maxItems: 32,
            items: {
              type: 'object',
              properties: {
                controllerName: str('status.parents[].controllerName'),
                conditions: {
                  type: 'array',
                  maxItems: 8,
                  items: {
                    type: 'object',
                    required: ['type', 'status'],
                    properties: {
                      type: str('conditions[].type'),
                      status: str('conditions[].status', { enum: ['True', 'False', 'Unknown'] }),
                      reason: str('conditions[].reason'),
                      message: str('conditions[].message', { maxLength: 32768 }),
                      observedGeneration: { type: 'integer', format: 'int64', minimum: 0 },
                      lastTransitionTime: { type: 'string', format: 'date-time' },
                    },
                  },
                },
              },
            },
          },
        },
      },
    },
  };
}

export interface CrdObject {
  apiVersion: 'apiextensions.k8s.io/v1';
  kind: 'CustomResourceDefinition';
  metadata: { name: string; annotations?: Record<string, string>; labels?: Record<string, string> };
  spec: Record<string, unknown>;
}

function crd(kind: string, plural: string, scope: 'Namespaced' | 'Cluster', depth: number, breadth: number): CrdObject {
  const schema = routeSchema(kind, depth, breadth);
  const version = (name: string, storage: boolean) => ({
    name,
    served: true,
    storage,
    schema: { openAPIV3Schema: schema },
    subresources: { status: {} },
    additionalPrinterColumns: [
      { name: 'Hostnames', type: 'string', jsonPath: '.spec.hostnames' },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ],
  });
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${plural}.${BUNDLE_GROUP}`,
      annotations: { 'ironlens.dev/bundle-version': 'v1.0.0', 'ironlens.dev/channel': 'standard' },
      labels: { 'ironlens.dev/fixture': 'crd-bundle' },
    },
    spec: {
      group: BUNDLE_GROUP,
      names: { kind, listKind: `${kind}List`, plural, singular: kind.toLowerCase(), categories: ['ironlens-gateway'] },
      scope,
      versions: [version('v1', true), version('v1beta1', false)],
    },
  };
}

/**
 * The bundle: GatewayClass, Gateway, HTTPRoute (the big one, > 262,144 bytes),
 * GRPCRoute, ReferenceGrant.
 */
export function crdBundle(): CrdObject[] {
  return [
    crd('GatewayClass', 'gatewayclasses', 'Cluster', 1, 6),
    crd('Gateway', 'gateways', 'Namespaced', 2, 7),
    crd('HTTPRoute', 'httproutes', 'Namespaced', 3, 7),
    crd('GRPCRoute', 'grpcroutes', 'Namespaced', 2, 8),
    crd('ReferenceGrant', 'referencegrants', 'Namespaced', 1, 4),
  ];
}

/** Serialized size, bytes, as a client would send it. */
export function jsonSize(o: unknown): number {
  return Buffer.byteLength(JSON.stringify(o));
}
