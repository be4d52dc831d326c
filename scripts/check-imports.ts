/**
 * The import graph's rules, run by `npm run check` (issue 32):
 * - no circle of imports inside any package (`packages/<name>/src`, tests left out: nothing
 *   imports a test), type-only imports included (a circle of types is a circle of design);
 * - no import running back up inside `core` and `clusters`: each of their top-level folders has a
 *   level ({@link LAYERS}); a file may import its own folder and folders of a lower level only, and
 *   folders of one level (the features of `clusters`) never import each other.
 * Prints every violation and exits 1 when there is one. `--json` prints them as JSON.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Levels of the top-level folders (and root files) of `src`, lowest first. A folder not listed is a
 * violation of its own: a new folder takes its place here. `.` is the package's root files.
 */
export const LAYERS: Record<string, string[][]> = {
  core: [
    ['errors', 'schema'],
    // Small parts every other one may use: the request's actor, timers, settings, processes, files, addresses.
    ['config', 'exec', 'fs', 'net', 'domain', 'timing', 'actor'],
    ['store'],
    ['secrets', 'audit'],
    ['jobs'],
    ['metrics'],
    ['auth'],
    // The HTTP app (it installs the access hook and serves /metrics) and the routes core serves itself (tokens).
    ['http'],
    ['testing'],
    ['.'],
  ],
  clusters: [
    // The API schemas (`@ironlens/clusters/api`): TypeBox only.
    ['api'],
    // The adapters: what leaves the process (Kubernetes, kubeconfig, Helm, git, bundle downloads, proxy settings, address guard).
    ['adapters'],
    // The domain, the stack profile, the store's tables and migrations, the problem renderer, shared manifests and route bits.
    ['shared'],
    // Registrations and sessions: every feature reads a registered cluster through it.
    ['registry'],
    // The features: none imports another (what one needs of another is an interface it declares, wired in `wiring.ts`).
    ['overview', 'software', 'gateway', 'bootstrap', 'deployments', 'nodes'],
    // The package's entry points and wiring.
    ['.'],
    // Test helpers for this and other packages' tests.
    ['testing'],
  ],
};

export interface Violation {
  pkg: string;
  kind: 'circle' | 'up' | 'sideways' | 'unlisted';
  files: string[];
  detail: string;
}

const isSource = (f: string) => /\.(ts|tsx)$/.test(f) && !/\.test\.tsx?$/.test(f) && !f.endsWith('.d.ts');

function walk(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist') continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else if (isSource(p)) out.push(p);
  }
  return out;
}

/** Relative specifiers a file imports or re-exports, `import type` and `import('…')` included. */
export function specifiers(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const out: string[] = [];
  for (const m of code.matchAll(/\b(?:import|export)\b[^'";]*?\bfrom\s*['"]([^'"]+)['"]/g)) out.push(m[1]);
  for (const m of code.matchAll(/\bimport\s*['"]([^'"]+)['"]/g)) out.push(m[1]);
  for (const m of code.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) out.push(m[1]);
  return out.filter((s) => s.startsWith('.'));
}

function resolveFile(from: string, spec: string): string | null {
  const base = resolve(dirname(from), spec);
  for (const c of [base, `${base}.ts`, `${base}.tsx`, join(base, 'index.ts'), join(base, 'index.tsx')]) {
    try {
      if (statSync(c).isFile()) return c;
    } catch {
      // not this one
    }
  }
  return null;
}

/** Strongly connected components of more than one file, or a file importing itself (Tarjan). */
function circles(graph: Map<string, Set<string>>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    idx.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || graph.get(v)?.has(v)) out.push(scc.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!idx.has(v)) visit(v);
  return out;
}

/** The top-level folder of a file under `src` (`.` for a root file). */
const folderOf = (src: string, file: string) => {
  const rel = relative(src, file).split('/');
  return rel.length === 1 ? '.' : rel[0];
};

/** Every violation of one package. */
export function checkPackage(pkg: string, root = ROOT): Violation[] {
  const src = join(root, 'packages', pkg, 'src');
  const files = walk(src);
  const graph = new Map<string, Set<string>>();
  for (const f of files) {
    const deps = new Set<string>();
    for (const s of specifiers(readFileSync(f, 'utf8'))) {
      const to = resolveFile(f, s);
      if (to?.startsWith(src) && isSource(to)) deps.add(to);
    }
    graph.set(f, deps);
  }
  const rel = (f: string) => relative(root, f);
  const out: Violation[] = circles(graph).map((c) => ({ pkg, kind: 'circle', files: c.map(rel), detail: `import circle: ${c.map((f) => relative(src, f)).join(' → ')}` }));
  const layers = LAYERS[pkg];
  if (!layers) return out;
  const level = new Map<string, number>();
  layers.forEach((names, i) => {
    for (const n of names) level.set(n, i);
  });
  const reported = new Set<string>();
  for (const [from, deps] of graph) {
    const a = folderOf(src, from);
    const la = level.get(a);
    if (la === undefined) {
      if (!reported.has(a)) out.push({ pkg, kind: 'unlisted', files: [rel(from)], detail: `src/${a}/ has no level in scripts/check-imports.ts LAYERS.${pkg}` });
      reported.add(a);
      continue;
    }
    for (const to of deps) {
      const b = folderOf(src, to);
      if (a === b) continue;
      const lb = level.get(b);
      if (lb === undefined) continue;
      if (lb > la) out.push({ pkg, kind: 'up', files: [rel(from), rel(to)], detail: `${relative(src, from)} imports ${relative(src, to)}: ${b}/ is above ${a}/` });
      else if (lb === la) out.push({ pkg, kind: 'sideways', files: [rel(from), rel(to)], detail: `${relative(src, from)} imports ${relative(src, to)}: ${a}/ and ${b}/ are features of one level` });
    }
  }
  return out;
}

export function checkAll(root = ROOT): Violation[] {
  const pkgs = readdirSync(join(root, 'packages')).filter((p) => {
    try {
      return statSync(join(root, 'packages', p, 'src')).isDirectory();
    } catch {
      return false;
    }
  });
  return pkgs.sort().flatMap((p) => checkPackage(p, root));
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const v = checkAll();
  if (process.argv.includes('--json')) console.log(JSON.stringify(v, null, 2));
  else for (const x of v) console.error(`[check-imports] ${x.pkg}: ${x.detail}`);
  if (v.length) {
    console.error(`[check-imports] ${v.length} violation(s)`);
    process.exit(1);
  }
  console.log('[check-imports] no import circle in any package; no import back up in core or clusters');
}
