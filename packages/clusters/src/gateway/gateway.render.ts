import { isIP } from 'node:net';
import type { KubeObjectRef } from '../adapters/kube.adapter';
import { GATEWAY_PORT_MAX, GATEWAY_PORT_MIN, type GatewayProvider, isDnsLabel, isDnsSubdomain } from '../shared/domain';
import type { StackProfile } from '../shared/profile';

/**
 * What the shared inference gateway of one registration is made of, rendered as Kubernetes
 * objects (pure functions: no I/O). The provider facts (controller names, chart names and their
 * release namespaces, the ext_authz policy kinds) follow llm-d Lens' gateway providers and the
 * providers' own charts at the profile's versions.
 */

/** The label every object ironlens applies itself carries (a chart's objects carry Helm's). */
export const GATEWAY_MANAGED_BY = { key: 'app.kubernetes.io/managed-by', value: 'ironlens' } as const;
/** The registration an object belongs to. */
export const CLUSTER_ID_LABEL = 'ironlens.dev/cluster';
export const PROVIDER_LABEL = 'ironlens.dev/gateway-provider';

/** The in-cluster Service the provider's ext_authz calls; its EndpointSlice points at ironlens. */
export const AUTHZ_SERVICE = 'lens-authz';
/** Stable port of that Service (the provider's policy targets it); the endpoint port is ironlens' console port. */
export const AUTHZ_SERVICE_PORT = 8081;
export const AUTHZ_PATH = '/api/v1/internal/model-gateway/authorize';
export const FAIRNESS_HEADER = 'x-llm-d-inference-fairness-id';
/** The IPP's release (Deployment and Service) in the gateway namespace, and its ext_proc port. */
export const IPP_NAME = 'lens-ipp';
export const IPP_GRPC_PORT = 9004;
export const IPP_CHART = 'payload-processor';

export const authzPath = (clusterId: string) => `${AUTHZ_PATH}/cluster/${clusterId}`;

/** One chart the provider's control plane is installed from (`helm upgrade --install`). */
export interface ChartInstall {
  release: string;
  /** The chart's upstream name, looked up under `IRONLENS_CHART_MIRROR`. */
  chart: string;
  version: string;
  namespace: string;
  values: Record<string, unknown>;
}

export interface ProviderSpec {
  key: GatewayProvider;
  /** The GatewayClass' controllerName. */
  controllerName: string;
  /** True: ironlens applies the GatewayClass; false: the platform's built-in class is used (GKE). */
  ownClass: boolean;
  /** Name of the built-in class when `ownClass` is false. */
  builtinClass?: string;
  /** Whether it runs its own proxy (then exposed as a NodePort on `gatewayPort`). */
  ownProxy: boolean;
  /** The control plane: charts in install order. */
  charts: (p: StackProfile) => ChartInstall[];
  /** Namespaces of the control plane (its availability is read from their Deployments). */
  controlPlaneNamespaces: string[];
}

/**
 * Values for Envoy Gateway as the AI Gateway needs it (the AI Gateway's documented values: Backend
 * API, extension manager). `backendResources` lists InferencePool (issue 28): without it Envoy
 * Gateway refuses an HTTPRoute's InferencePool backendRef (`InvalidKind`), so no model could be
 * published on the gateway.
 */
export function envoyGatewayValues(): { config: { envoyGateway: Record<string, unknown> & { extensionManager: Record<string, unknown> } } } {
  return {
    config: {
      envoyGateway: {
        gateway: { controllerName: 'gateway.envoyproxy.io/gatewayclass-controller' },
        provider: { type: 'Kubernetes' },
        extensionApis: { enableEnvoyPatchPolicy: true, enableBackend: true },
        extensionManager: {
          hooks: {
            xdsTranslator: {
              translation: { listener: { includeAll: true }, route: { includeAll: true }, cluster: { includeAll: true }, secret: { includeAll: true } },
              post: ['Translation', 'Cluster', 'Route'],
            },
          },
          service: { fqdn: { hostname: 'ai-gateway-controller.envoy-ai-gateway-system.svc.cluster.local', port: 1063 } },
          backendResources: [{ group: 'inference.networking.k8s.io', kind: 'InferencePool', version: 'v1' }],
        },
      },
    },
  };
}

export const PROVIDERS: Record<GatewayProvider, ProviderSpec> = {
  'envoy-ai-gateway': {
    key: 'envoy-ai-gateway',
    controllerName: 'gateway.envoyproxy.io/gatewayclass-controller',
    ownClass: true,
    ownProxy: true,
    controlPlaneNamespaces: ['envoy-gateway-system', 'envoy-ai-gateway-system'],
    charts: (p) => [
      { release: 'eg', chart: 'gateway-helm', version: p.gateway_providers.envoy_gateway, namespace: 'envoy-gateway-system', values: envoyGatewayValues() },
      { release: 'aieg-crd', chart: 'ai-gateway-crds-helm', version: p.gateway_providers.envoy_ai_gateway, namespace: 'envoy-ai-gateway-system', values: {} },
      { release: 'aieg', chart: 'ai-gateway-helm', version: p.gateway_providers.envoy_ai_gateway, namespace: 'envoy-ai-gateway-system', values: {} },
    ],
  },
  istio: {
    key: 'istio',
    controllerName: 'istio.io/gateway-controller',
    ownClass: true,
    ownProxy: true,
    controlPlaneNamespaces: ['istio-system'],
    charts: (p) => [
      { release: 'istio-base', chart: 'base', version: p.gateway_providers.istio, namespace: 'istio-system', values: {} },
      {
        release: 'istiod',
        chart: 'istiod',
        version: p.gateway_providers.istio,
        namespace: 'istio-system',
        values: { pilot: { env: { ENABLE_GATEWAY_API_INFERENCE_EXTENSION: 'true' } } },
      },
    ],
  },
  agentgateway: {
    key: 'agentgateway',
    controllerName: 'agentgateway.dev/agentgateway',
    ownClass: true,
    ownProxy: true,
    controlPlaneNamespaces: ['agentgateway-system'],
    charts: (p) => [
      { release: 'agentgateway-crds', chart: 'agentgateway-crds', version: p.gateway_providers.agentgateway, namespace: 'agentgateway-system', values: {} },
      {
        release: 'agentgateway',
        chart: 'agentgateway',
        version: p.gateway_providers.agentgateway,
        namespace: 'agentgateway-system',
        values: { inferenceExtension: { enabled: true } },
      },
    ],
  },
  gke: {
    key: 'gke',
    controllerName: 'networking.gke.io/gateway',
    ownClass: false,
    builtinClass: 'gke-l7-regional-external-managed',
    ownProxy: false,
    controlPlaneNamespaces: [],
    charts: () => [],
  },
};

/** The registration's gateway settings, as stored (the renderer checks them again). */
export interface GatewayInputs {
  clusterId: string;
  provider: GatewayProvider;
  namespace: string;
  gatewayName: string;
  /** NodePort of the Gateway's HTTP listener; null: the provider's default Service type. */
  port: number | null;
  /** Address the cluster reaches ironlens on; null: no hook. */
  authzHost: string | null;
  /** ironlens' console port (the EndpointSlice's port); null: not known yet (an ephemeral console port before it is bound), no hook rendered. */
  authzPort: number | null;
}

/** Name of the registration's GatewayClass (per registration, so a delete removes exactly it). */
export const gatewayClassName = (i: Pick<GatewayInputs, 'clusterId' | 'provider'>) =>
  PROVIDERS[i.provider].ownClass ? `lens-${i.provider}-${i.clusterId}` : PROVIDERS[i.provider].builtinClass!;

/** Refuses values outside their grammar before they reach an object. */
export function checkGatewayInputs(i: GatewayInputs): void {
  if (!/^[0-9a-f]{8}$/.test(i.clusterId)) throw new Error(`cluster id ${JSON.stringify(i.clusterId)} is not 8 hex characters`);
  if (!(i.provider in PROVIDERS)) throw new Error(`unknown gateway provider ${JSON.stringify(i.provider)}`);
  if (!isDnsLabel(i.namespace)) throw new Error(`gateway namespace ${JSON.stringify(i.namespace)} is not a DNS label`);
  if (!isDnsLabel(i.gatewayName)) throw new Error(`gateway name ${JSON.stringify(i.gatewayName)} is not a DNS label`);
  if (i.port !== null && (!Number.isInteger(i.port) || i.port < GATEWAY_PORT_MIN || i.port > GATEWAY_PORT_MAX)) throw new Error(`gateway port ${i.port} is not a NodePort`);
  if (i.authzPort !== null && (!Number.isInteger(i.authzPort) || i.authzPort < 1 || i.authzPort > 65535)) throw new Error(`authz port ${i.authzPort} is not a port`);
  if (i.authzHost !== null && !authzAddress(i.authzHost)) throw new Error(`gatewayAuthzHost ${JSON.stringify(i.authzHost)} is not an IP address or a DNS name`);
}

/** `{addressType, address}` of an authz host (an IP, or a DNS name as an FQDN endpoint), or null. */
export function authzAddress(host: string): { addressType: 'IPv4' | 'IPv6' | 'FQDN'; address: string } | null {
  const h = host.trim().replace(/^\[(.*)\]$/, '$1');
  const v = isIP(h);
  if (v === 4) return { addressType: 'IPv4', address: h };
  if (v === 6) return { addressType: 'IPv6', address: h };
  if (isDnsSubdomain(h.toLowerCase()) && !/^\d+(\.\d+)*$/.test(h)) return { addressType: 'FQDN', address: h.toLowerCase() };
  return null;
}

export interface RenderedGateway {
  /** The GatewayClass (cluster-scoped), when ironlens owns it. */
  gatewayClass: KubeObjectRef | null;
  /** Namespace, provider parameters, Gateway, policies: applied in this order. */
  gateway: KubeObjectRef[];
  /** The hook's Service, EndpointSlice and the provider's ext_authz policy (empty without a host). */
  authz: KubeObjectRef[];
  /** The IPP's Helm values and its wiring into the provider (ext_proc). */
  ippValues: Record<string, unknown>;
  ippWiring: KubeObjectRef[];
}

const GW_API = 'gateway.networking.k8s.io/v1';
const GW_GROUP = 'gateway.networking.k8s.io';
const EG_API = 'gateway.envoyproxy.io/v1alpha1';

/** Renders everything ironlens applies itself for one registration. */
export function renderGateway(i: GatewayInputs, profile: StackProfile): RenderedGateway {
  checkGatewayInputs(i);
  const spec = PROVIDERS[i.provider];
  const labels = { [GATEWAY_MANAGED_BY.key]: GATEWAY_MANAGED_BY.value, [CLUSTER_ID_LABEL]: i.clusterId, [PROVIDER_LABEL]: i.provider };
  const meta = (name: string) => ({ name, namespace: i.namespace, labels: { ...labels } });
  const className = gatewayClassName(i);
  const target = [{ group: GW_GROUP, kind: 'Gateway', name: i.gatewayName }];

  const gatewayClass: KubeObjectRef | null = spec.ownClass
    ? { apiVersion: GW_API, kind: 'GatewayClass', metadata: { name: className, labels: { ...labels } }, spec: { controllerName: spec.controllerName } }
    : null;

  const gatewaySpec: Record<string, unknown> = {
    gatewayClassName: className,
    listeners: [{ name: 'http', protocol: 'HTTP', port: 80, allowedRoutes: { namespaces: { from: 'All' } } }],
  };
  const gateway: KubeObjectRef[] = [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: i.namespace, labels: { ...labels } } }];
  if (spec.ownProxy && i.provider === 'envoy-ai-gateway') {
    const proxy = `${i.gatewayName}-proxy`;
    const envoyService: Record<string, unknown> = { type: i.port === null ? 'LoadBalancer' : 'NodePort' };
    // Envoy Gateway names the generated Service's ports after the listeners; the patch merges by port.
    if (i.port !== null) envoyService.patch = { type: 'StrategicMerge', value: { spec: { ports: [{ port: 80, nodePort: i.port }] } } };
    gateway.push({ apiVersion: EG_API, kind: 'EnvoyProxy', metadata: meta(proxy), spec: { provider: { type: 'Kubernetes', kubernetes: { envoyService } } } });
    gatewaySpec.infrastructure = { parametersRef: { group: 'gateway.envoyproxy.io', kind: 'EnvoyProxy', name: proxy } };
  } else if (spec.ownProxy && i.provider === 'istio' && i.port !== null) {
    const cm = `${i.gatewayName}-config`;
    gateway.push({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: meta(cm),
      data: { service: `spec:\n  type: NodePort\n  ports:\n  - name: http\n    port: 80\n    nodePort: ${i.port}\n` },
    });
    gatewaySpec.infrastructure = { parametersRef: { group: '', kind: 'ConfigMap', name: cm } };
  } else if (spec.ownProxy && i.provider === 'agentgateway' && i.port !== null) {
    const params = `${i.gatewayName}-params`;
    gateway.push({
      apiVersion: 'agentgateway.dev/v1alpha1',
      kind: 'AgentgatewayParameters',
      metadata: meta(params),
      spec: { service: { spec: { type: 'NodePort', ports: [{ name: 'http', port: 80, nodePort: i.port }] } } },
    });
    gatewaySpec.infrastructure = { parametersRef: { group: 'agentgateway.dev', kind: 'AgentgatewayParameters', name: params } };
  }
  const gatewayLabels: Record<string, string> = { ...labels };
  if (i.provider === 'istio') gatewayLabels['istio.io/enable-inference-extproc'] = 'true';
  gateway.push({ apiVersion: GW_API, kind: 'Gateway', metadata: { ...meta(i.gatewayName), labels: gatewayLabels }, spec: gatewaySpec });
  if (i.provider === 'envoy-ai-gateway') {
    gateway.push({ apiVersion: EG_API, kind: 'ClientTrafficPolicy', metadata: meta(`${i.gatewayName}-buffer`), spec: { targetRefs: target, connection: { bufferLimit: '50Mi' } } });
  }

  const authz: KubeObjectRef[] = [];
  const addr = i.authzHost === null ? null : authzAddress(i.authzHost);
  if (addr && i.provider !== 'gke' && i.authzPort !== null) {
    authz.push({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: meta(AUTHZ_SERVICE),
      spec: { ports: [{ name: 'http', port: AUTHZ_SERVICE_PORT, targetPort: i.authzPort, protocol: 'TCP' }] },
    });
    authz.push({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { ...meta(`${AUTHZ_SERVICE}-ironlens`), labels: { ...labels, 'kubernetes.io/service-name': AUTHZ_SERVICE } },
      addressType: addr.addressType,
      endpoints: [{ addresses: [addr.address], conditions: { ready: true } }],
      ports: [{ name: 'http', port: i.authzPort, protocol: 'TCP' }],
    });
    const path = authzPath(i.clusterId);
    if (i.provider === 'envoy-ai-gateway') {
      authz.push({
        apiVersion: EG_API,
        kind: 'SecurityPolicy',
        metadata: meta(`${i.gatewayName}-authz`),
        spec: {
          targetRefs: target,
          extAuth: { http: { path, backendRefs: [{ name: AUTHZ_SERVICE, port: AUTHZ_SERVICE_PORT }], headersToBackend: [FAIRNESS_HEADER] } },
        },
      });
    } else if (i.provider === 'agentgateway') {
      authz.push({
        apiVersion: 'agentgateway.dev/v1alpha1',
        kind: 'AgentgatewayPolicy',
        metadata: meta(`${i.gatewayName}-authz`),
        spec: {
          targetRefs: target,
          traffic: { extAuth: { backendRef: { name: AUTHZ_SERVICE, namespace: i.namespace, port: AUTHZ_SERVICE_PORT }, http: { path: JSON.stringify(path), allowedResponseHeaders: [FAIRNESS_HEADER] } } },
        },
      });
    } else if (i.provider === 'istio') {
      authz.push({
        apiVersion: 'security.istio.io/v1',
        kind: 'AuthorizationPolicy',
        metadata: meta(`${i.gatewayName}-authz`),
        spec: { targetRefs: target, action: 'CUSTOM', provider: { name: `${AUTHZ_SERVICE}-${i.clusterId}` }, rules: [{}] },
      });
    }
  }

  // The IPP chart (llm-d-inference-payload-processor's `payload-processor`): its Deployment and
  // Service are named `payloadProcessor.name`; `provider.name` selects its own wiring (Istio's
  // EnvoyFilter, GKE's extension), `none` leaves the wiring to ironlens (Envoy Gateway below).
  const ippValues = {
    payloadProcessor: { name: IPP_NAME, image: { tag: profile.llm_d_inference_payload_processor, pullPolicy: 'IfNotPresent' }, port: IPP_GRPC_PORT },
    provider: { name: i.provider === 'istio' ? 'istio' : i.provider === 'gke' ? 'gke' : 'none' },
    inferenceGateway: { name: i.gatewayName },
  };
  const ippWiring: KubeObjectRef[] = [];
  if (i.provider === 'envoy-ai-gateway') {
    ippWiring.push({
      apiVersion: EG_API,
      kind: 'EnvoyExtensionPolicy',
      metadata: meta(`${i.gatewayName}-ipp`),
      spec: {
        targetRefs: target,
        extProc: [{ backendRefs: [{ name: IPP_NAME, port: IPP_GRPC_PORT }], processingMode: { request: { body: 'Buffered' } } }],
      },
    });
  }
  return { gatewayClass, gateway, authz, ippValues, ippWiring };
}
