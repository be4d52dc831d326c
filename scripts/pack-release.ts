/**
 * `npm run release` (issue 23): one installable package, `ironlens-<version>.tgz`, from the
 * workspace: the compiled command (packages/cli/dist, built by `npm run build`), the built console
 * (packages/web/dist), the data files the command reads at run time (every package's `assets/`
 * and `profile/`: the master builder's hooks, the host reporter, the stack profile), this
 * README; no workspace links, no dev dependencies, no TypeScript sources. Its dependencies are
 * exactly the packages the compiled command loads from node_modules (native addons such as
 * better-sqlite3, and the few kept out of the bundle), at the versions tested here.
 *
 * The layout keeps the repository's relative paths (packages/cli/dist next to
 * packages/clusters/profile and packages/web/dist), which the bundle's rewritten
 * `import.meta.url`s point at. `npm install -g ./ironlens-<version>.tgz` then gives a working
 * `ironlens`; only the native modules are built at install (a C toolchain, make and python3 are
 * needed where no prebuilt binary can be had).
 *
 *   node --import tsx scripts/pack-release.ts [OUT_DIR]     # default .artifacts/release
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join, resolve } from 'node:path';
import { productionSources } from '../packages/core/src/testing/sources';

const ROOT = resolve(import.meta.dirname, '..');
const out = resolve(process.argv[2] ?? join(ROOT, '.artifacts', 'release'));
const rootPkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string; engines: Record<string, string>; description: string };
const dist = join(ROOT, 'packages', 'cli', 'dist');
if (!existsSync(join(dist, 'main.js')) || !existsSync(join(ROOT, 'packages', 'web', 'dist', 'index.html'))) {
  throw new Error('build first: npm run build (the compiled command and the console)');
}

// What the compiled command loads by bare name at run time: its external imports, and what the
// workspace's own code loads through createRequire at first use (the validators and serializers,
// ReDoc's bundle, the Kubernetes client, pg), which the bundle leaves to node_modules.
const builtins = new Set(builtinModules);
const names = new Set<string>();
const packageName = (spec: string) => spec.split('/').slice(0, spec.startsWith('@') ? 2 : 1).join('/');
for (const f of productionSources(ROOT)) {
  for (const m of readFileSync(f, 'utf8').matchAll(/(?:\brequire(?:\.resolve)?|createRequire\([^)]*\))\(\s*['"]([^'"./][^'"]*)['"]/g)) {
    const name = packageName(m[1]);
    if (!builtins.has(name) && !name.startsWith('node:') && existsSync(join(ROOT, 'node_modules', name, 'package.json'))) names.add(name);
  }
}
for (const f of readdirSync(dist).filter((n) => n.endsWith('.js'))) {
  const text = readFileSync(join(dist, f), 'utf8');
  for (const m of text.matchAll(/(?:\bfrom\s*|\bimport\(\s*|\b(?:__)?require\(\s*)["']((?:@[a-z0-9_-][a-z0-9._-]*\/)?[a-z0-9_-][a-z0-9._-]*)(?:\/[^"']*)?["']/g)) {
    const name = m[1];
    if (builtins.has(name) || name.startsWith('node:')) continue;
    if (existsSync(join(ROOT, 'node_modules', name, 'package.json'))) names.add(name);
  }
}
const dependencies: Record<string, string> = {};
for (const name of [...names].sort()) {
  dependencies[name] = (JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
}

const stage = join(out, 'stage');
rmSync(stage, { recursive: true, force: true });
mkdirSync(stage, { recursive: true });
const copy = (rel: string) => cpSync(join(ROOT, rel), join(stage, rel), { recursive: true, filter: (src) => !src.endsWith('.map') });
copy('packages/cli/bin');
copy('packages/cli/dist');
copy('packages/web/dist');
// The data files the command reads at run time beside its packages' sources (the bundle's
// rewritten import.meta.urls point there): every package's assets/ and profile/ folder — the
// master builder's hooks, the host reporter, the stack profile (issue 29, finding 12).
const dataDirs = readdirSync(join(ROOT, 'packages')).flatMap((p) => ['assets', 'profile'].map((d) => `packages/${p}/${d}`)).filter((rel) => existsSync(join(ROOT, rel)));
for (const rel of dataDirs) copy(rel);
copy('README.md');
writeFileSync(
  join(stage, 'package.json'),
  `${JSON.stringify(
    {
      name: 'ironlens',
      version: rootPkg.version,
      description: rootPkg.description,
      type: 'module',
      bin: { ironlens: 'packages/cli/bin/ironlens.mjs' },
      engines: rootPkg.engines,
      dependencies,
      files: ['packages/', 'README.md'],
    },
    null,
    2,
  )}\n`,
);
mkdirSync(out, { recursive: true });
const packed = execFileSync('npm', ['pack', '--silent', '--pack-destination', out], { cwd: stage, encoding: 'utf8' }).trim().split('\n').at(-1) as string;
process.stdout.write(`${join(out, packed)}\n`);
process.stderr.write(`[release] ${packed}: dependencies ${Object.entries(dependencies).map(([n, v]) => `${n}@${v}`).join(', ')}\n`);
