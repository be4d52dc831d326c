/**
 * Compiles the `ironlens` command to JavaScript: one esbuild bundle of packages/cli/src/main.ts
 * into packages/cli/dist/, split at every dynamic `import()` so a subcommand's modules load
 * only when it runs. Workspace packages (whatever lives in packages/*) and the pure-JavaScript
 * dependencies are bundled; native addons (better-sqlite3) and packages that read files next
 * to themselves stay external and are loaded from node_modules at run time.
 *
 * Workspace code that finds files next to itself through `import.meta.url` (the console's
 * assets, data files such as packages/metal/assets or packages/clusters/profile) would look
 * inside dist/ once bundled: each such `import.meta.url` (and `.dirname`, `.filename`) is
 * rewritten to its source file's location, relative to the bundle, so those paths resolve as
 * they do from the sources (and keep resolving when the repository is moved).
 *
 * Run by the root `prepare` script (`npm install`) and by `npm run build:cli`
 * (scripts/build-cli.ts).
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';

/** The repository's root. */
export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
/** Where the `ironlens` bin looks for the compiled command. */
export const CLI_DIST = join(REPO_ROOT, 'packages', 'cli', 'dist');
const packagesDir = join(REPO_ROOT, 'packages') + sep;

const NODE_MODULES = `${sep}node_modules${sep}`;

/** The directory of the package a file in node_modules belongs to. */
function packageRoot(file: string): string {
  const i = file.lastIndexOf(NODE_MODULES) + NODE_MODULES.length;
  const parts = file.slice(i).split(sep);
  return file.slice(0, i) + parts.slice(0, parts[0].startsWith('@') ? 2 : 1).join(sep);
}

/** Directories of a package that are not loaded at run time. */
const NOT_RUNTIME = new Set(['node_modules', 'test', 'tests', '__tests__', 'bench', 'benchmark', 'benchmarks', 'example', 'examples', 'scripts', 'build', 'docs', 'types', '.github']);
/** Code that finds files relative to itself: bundled, it would look inside dist/. */
const SELF_RELATIVE = /__dirname|__filename|require\.resolve|import\.meta\.(url|dirname|filename)/;

async function selfRelative(dir: string): Promise<boolean> {
  for (const e of await readdir(dir, { withFileTypes: true })) {
    if (e.isDirectory()) {
      if (!NOT_RUNTIME.has(e.name) && (await selfRelative(join(dir, e.name)))) return true;
    } else if (/\.(c|m)?js$/.test(e.name) && SELF_RELATIVE.test(await readFile(join(dir, e.name), 'utf8'))) return true;
  }
  return false;
}

const externalReasons = new Map<string, Promise<string | null>>();

/**
 * Why a dependency must stay outside the bundle, or null: a native addon (an install script,
 * `gypfile`, a binding.gyp: better-sqlite3, ssh2), or code that reads files next to itself
 * (Swagger UI's static files, pino's transport worker).
 */
function mustStayExternal(root: string): Promise<string | null> {
  let reason = externalReasons.get(root);
  if (!reason) {
    reason = (async () => {
      const pkg = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { gypfile?: boolean; scripts?: Record<string, string> };
      if (pkg.gypfile || pkg.scripts?.install || existsSync(join(root, 'binding.gyp'))) return 'native addon';
      return (await selfRelative(root)) ? 'reads files next to itself' : null;
    })();
    externalReasons.set(root, reason);
  }
  return reason;
}

/**
 * Workspace packages are bundled, whatever lives in packages/*. Dependencies from node_modules
 * are bundled too (fewer files to find and load at start), except those that must stay
 * external; an external import keeps its bare name when Node finds the same file from dist/,
 * else it becomes a relative path to the exact file (a nested node_modules copy).
 */
const dependencies = (outdir: string): Plugin => ({
  name: 'dependencies',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, async (args) => {
      if (args.pluginData === 'resolving' || args.path.startsWith('node:')) return undefined;
      const r = await b.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, importer: args.importer, pluginData: 'resolving' });
      // Unresolvable: esbuild's own handling (an optional require() in a try block stays a require).
      if (r.errors.length > 0) return undefined;
      if (r.external || !r.path.includes(NODE_MODULES)) return r;
      if (!(await mustStayExternal(packageRoot(r.path)))) return r;
      const fromDist = await b.resolve(args.path, { kind: args.kind, resolveDir: outdir, pluginData: 'resolving' });
      if (fromDist.errors.length === 0 && fromDist.path === r.path) return { path: args.path, external: true };
      return { path: relative(outdir, r.path).split(sep).join('/'), external: true };
    });
  },
});

/** `import.meta.url` in workspace sources → the source file's URL, relative to the output. */
const sourceRelativeUrls = (outdir: string): Plugin => ({
  name: 'source-relative-import-meta-url',
  setup(b) {
    b.onLoad({ filter: /\.(ts|tsx|mts|js|mjs)$/ }, async (args) => {
      if (!args.path.startsWith(packagesDir) || args.path.includes(`${sep}node_modules${sep}`)) return undefined;
      const text = await readFile(args.path, 'utf8');
      if (!/import\.meta\.(url|dirname|filename)/.test(text)) return undefined;
      const rel = JSON.stringify(relative(outdir, args.path).split(sep).join('/'));
      const loader = args.path.endsWith('.tsx') ? 'tsx' : args.path.endsWith('ts') ? 'ts' : 'js';
      const contents = text
        .replaceAll('import.meta.url', `new URL(${rel}, import.meta.url).href`)
        .replaceAll('import.meta.filename', `decodeURIComponent(new URL(${rel}, import.meta.url).pathname)`)
        .replaceAll('import.meta.dirname', `decodeURIComponent(new URL(".", new URL(${rel}, import.meta.url)).pathname).replace(/\\/$/, "")`);
      return { contents, loader };
    });
  },
});

/**
 * Builds the command into `outdir` (default {@link CLI_DIST}), emptied first. The output must
 * sit inside the repository, so that its imports of node_modules packages resolve.
 * Returns a one-line summary.
 */
export async function buildCli(outdir = CLI_DIST): Promise<string> {
  await rm(outdir, { recursive: true, force: true });
  await mkdir(outdir, { recursive: true }); // resolutions from dist/ are asked before it is written
  const result = await build({
    absWorkingDir: REPO_ROOT,
    entryPoints: { main: join(REPO_ROOT, 'packages', 'cli', 'src', 'main.ts') },
    outdir,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: 'linked',
    chunkNames: '[name]-[hash]',
    tsconfig: join(REPO_ROOT, 'tsconfig.json'),
    plugins: [dependencies(outdir), sourceRelativeUrls(outdir)],
    // Bundled CommonJS code calls require() (for Node's modules and the external ones).
    banner: { js: "import { createRequire as __ironlensCreateRequire } from 'node:module'; const require = __ironlensCreateRequire(import.meta.url);" },
    logLevel: 'warning',
    metafile: true,
  });
  const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
  const files = Object.keys(result.metafile.outputs).filter((f) => f.endsWith('.js')).length;
  return `${relative(REPO_ROOT, outdir)}: ${files} files, ${Math.round(bytes / 1024)} KiB`;
}
