import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';

/**
 * The real release bundles, rebuilt from the Go modules that hold their sources (fetched from the
 * Go module proxy, as the kube-harness fetches Kubernetes):
 * - `sigs.k8s.io/gateway-api@<v>`: `standard-install.yaml` exactly as its `hack/build-install-yaml.sh`
 *   writes it (the boilerplate, a header, then each `config/crd/standard/gateway*.yaml` after a
 *   `---` and a comment naming it); for v1.5.1 this is byte for byte the release asset.
 * - `sigs.k8s.io/gateway-api-inference-extension@<v>`: the CRDs of `config/crd/bases` joined as
 *   documents (the release's `v1-manifests.yaml` is made by kustomize and yq; not byte-equal).
 * Throws with the install hint when `go` is missing.
 */
function moduleDir(module: string, version: string): string {
  const work = mkdtempSync(join(tmpdir(), `ironlens-gomod-${process.pid}-`));
  try {
    let out: string;
    try {
      out = execFileSync('go', ['mod', 'download', '-json', `${module}@${version}`], {
        cwd: work,
        encoding: 'utf8',
        env: { ...process.env, GOWORK: 'off', GOFLAGS: '-mod=mod', GOTOOLCHAIN: process.env.GOTOOLCHAIN || 'local' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    } catch (e) {
      const err = e as NodeJS.ErrnoException & { stdout?: string };
      if (err.code === 'ENOENT') throw new Error('go is not on PATH: install Go >= 1.26 (https://go.dev/dl/), as for the kube-harness (docs/kube-harness.md)');
      out = err.stdout ?? '';
      if (!out) throw e;
    }
    const info = JSON.parse(out) as { Dir?: string; Error?: string };
    if (info.Error || !info.Dir) throw new Error(`go mod download ${module}@${version}: ${info.Error ?? 'no Dir'}`);
    return info.Dir;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

export function upstreamGatewayApiBundle(version = 'v1.5.1'): string {
  const dir = moduleDir('sigs.k8s.io/gateway-api', version);
  const year = String(new Date().getFullYear());
  let out = readFileSync(join(dir, 'hack/boilerplate/boilerplate.sh.txt'), 'utf8').replaceAll('YEAR', year);
  out += '#\n# Gateway API Standard channel install\n#\n';
  const files = readdirSync(join(dir, 'config/crd/standard'))
    .filter((f) => f.startsWith('gateway') && f.endsWith('.yaml'))
    .sort();
  for (const f of files) out += `---\n#\n# config/crd/standard/${f}\n#\n${readFileSync(join(dir, 'config/crd/standard', f), 'utf8')}`;
  return out;
}

export function upstreamInferenceExtensionCrds(version = 'v1.5.0'): string {
  const dir = moduleDir('sigs.k8s.io/gateway-api-inference-extension', version);
  const files = readdirSync(join(dir, 'config/crd/bases'))
    .filter((f) => f.endsWith('.yaml'))
    .sort();
  return files.map((f) => readFileSync(join(dir, 'config/crd/bases', f), 'utf8')).join('---\n');
}

/** The Gateway API standard channel (`upstreamGatewayApiBundle`) as objects, for other packages' tests. */
export function upstreamGatewayApiObjects(version = 'v1.5.1'): Array<Record<string, unknown> & { kind: string }> {
  return parseAllDocuments(upstreamGatewayApiBundle(version))
    .map((d) => d.toJSON() as (Record<string, unknown> & { kind: string }) | null)
    .filter((o): o is Record<string, unknown> & { kind: string } => !!o && typeof o.kind === 'string');
}
