import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The llm-d stack profile: the component versions this ironlens release installs. One file
 * kept in the repository (`packages/clusters/profile/llm-d-stack.json`), served as is by
 * `GET /api/v1/versions` and read by every install path (downloads, pre-pull, CRDs, the
 * version fields of a cluster record, the minimum Kubernetes version).
 */
export interface StackProfile {
  llm_d: string;
  min_k8s_version: string;
  llm_d_router: string;
  llm_d_lensmark: string;
  llm_d_inference_payload_processor: string;
  k8s_gateway_api: string;
  k8s_gateway_api_inference_extension: string;
  gateway_providers: {
    istio: string;
    envoy_gateway: string;
    envoy_ai_gateway: string;
    agentgateway: string;
  };
}

export const STACK_PROFILE_PATH = fileURLToPath(new URL('../profile/llm-d-stack.json', import.meta.url));

const VERSION = /^v?\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?$/;

/** Reads and checks the profile file (every value a version tag). */
export function loadStackProfile(path = STACK_PROFILE_PATH): StackProfile {
  const raw = JSON.parse(readFileSync(path, 'utf8')) as StackProfile;
  const flat: Array<[string, unknown]> = [
    ...Object.entries(raw).filter(([k]) => k !== 'gateway_providers'),
    ...Object.entries(raw.gateway_providers ?? {}).map(([k, v]) => [`gateway_providers.${k}`, v] as [string, unknown]),
  ];
  for (const key of [
    'llm_d',
    'min_k8s_version',
    'llm_d_router',
    'llm_d_lensmark',
    'llm_d_inference_payload_processor',
    'k8s_gateway_api',
    'k8s_gateway_api_inference_extension',
  ]) {
    if (!(key in raw)) throw new Error(`${path}: ${key} is missing`);
  }
  for (const [k, v] of flat) {
    if (typeof v !== 'string' || !VERSION.test(v)) throw new Error(`${path}: ${k} must be a version tag, got ${JSON.stringify(v)}`);
  }
  return Object.freeze({ ...raw, gateway_providers: Object.freeze({ ...raw.gateway_providers }) });
}

/** The profile of this build, read once. */
let cached: StackProfile | undefined;
export function stackProfile(): StackProfile {
  cached ??= loadStackProfile();
  return cached;
}
