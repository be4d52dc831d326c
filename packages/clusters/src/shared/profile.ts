import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { BundleId, StackProfile } from '../api/clusters';

/**
 * The llm-d stack profile: the component versions this ironlens release installs. One file
 * kept in the repository (`packages/clusters/profile/llm-d-stack.json`), served as is by
 * `GET /api/v1/versions` and read by every install path (downloads, pre-pull, CRDs, the
 * version fields of a cluster record, the minimum Kubernetes version). Its shape is the
 * answer's schema (`StackProfileSchema`).
 */
export type { StackProfile } from '../api/clusters';

export const STACK_PROFILE_PATH = fileURLToPath(new URL('../../profile/llm-d-stack.json', import.meta.url));

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

/**
 * The sha256 each CRD bundle of the profile must have (`packages/clusters/profile/crd-bundles.json`).
 * A bundle whose download does not hash to its pin is not applied; `null` means not pinned yet
 * (only the kind/name allow-list and the size cap guard it).
 */
export type BundlePins = Readonly<Record<'gateway_api' | 'gateway_api_inference_extension', string | null>>;

export const BUNDLE_PINS_PATH = fileURLToPath(new URL('../../profile/crd-bundles.json', import.meta.url));

/** Reads and checks the pins (each a 64-hex sha256, or null). */
export function loadBundlePins(path = BUNDLE_PINS_PATH): BundlePins {
  const raw = JSON.parse(readFileSync(path, 'utf8')) as Record<string, { sha256?: unknown } | undefined>;
  const pin = (k: 'gateway_api' | 'gateway_api_inference_extension'): string | null => {
    const v = raw[k]?.sha256;
    if (v === null) return null;
    if (typeof v !== 'string' || !/^[0-9a-f]{64}$/.test(v)) throw new Error(`${path}: ${k}.sha256 must be a sha256 (64 hex digits) or null`);
    return v;
  };
  return Object.freeze({ gateway_api: pin('gateway_api'), gateway_api_inference_extension: pin('gateway_api_inference_extension') });
}

/** The two pinned bundles, under `IRONLENS_GITHUB_MIRROR`. */
export function bundleUrls(mirror: string, p: StackProfile): Record<BundleId, string> {
  return {
    gateway_api: `${mirror}/kubernetes-sigs/gateway-api/releases/download/${p.k8s_gateway_api}/standard-install.yaml`,
    gateway_api_inference_extension: `${mirror}/kubernetes-sigs/gateway-api-inference-extension/releases/download/${p.k8s_gateway_api_inference_extension}/v1-manifests.yaml`,
  };
}
