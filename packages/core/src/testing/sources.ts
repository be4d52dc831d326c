import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Packages that exist only for tests (a dev dependency of the packages that use them): all of
 * their sources are test support. `kube-harness` starts a throw-away control plane for tests.
 */
const TEST_SUPPORT_PACKAGES = new Set(['kube-harness']);

/**
 * Every production source file of the monorepo at `repo`: `.ts`/`.tsx` under
 * `packages/<pkg>/src`, without tests (`*.test.ts`), test support (`testing/` folders) and
 * test-only packages (`kube-harness`).
 */
export function productionSources(repo: string): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) {
        if (e.name !== 'node_modules' && e.name !== 'testing') walk(p);
      } else if (/\.tsx?$/.test(e.name) && !/\.test\.tsx?$/.test(e.name)) {
        out.push(p);
      }
    }
  };
  for (const pkg of readdirSync(join(repo, 'packages'))) {
    if (TEST_SUPPORT_PACKAGES.has(pkg)) continue;
    const src = join(repo, 'packages', pkg, 'src');
    try {
      walk(src);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  return out;
}
