/**
 * Compiles the `ironlens` command to JavaScript: one esbuild bundle of packages/cli/src/main.ts
 * into packages/cli/dist/, split at every dynamic `import()` so a subcommand's modules load
 * only when it runs. Workspace packages (whatever lives in packages/*) and the pure-JavaScript
 * dependencies are bundled; native addons (better-sqlite3) and packages whose bundled code
 * would find files next to itself (`__dirname`, `require.resolve`, `import.meta.url`: found by
 * a first build pass) stay external and are loaded from node_modules at run time.
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
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, rm } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BuildOptions, build, type Plugin } from 'esbuild';

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

/** Code that finds files relative to itself: bundled, it would look inside dist/. */
const SELF_RELATIVE = /__dirname|__filename|require\.resolve|import\.meta\.(url|dirname|filename)/;

const native = new Map<string, boolean>();

/** A native addon (an install script, `gypfile`, a binding.gyp: better-sqlite3, ssh2). */
function isNative(root: string): boolean {
  let yes = native.get(root);
  if (yes === undefined) {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { gypfile?: boolean; scripts?: Record<string, string> };
    yes = Boolean(pkg.gypfile || pkg.scripts?.install || existsSync(join(root, 'binding.gyp')));
    native.set(root, yes);
  }
  return yes;
}

/**
 * Workspace packages are bundled, whatever lives in packages/*. Dependencies from node_modules
 * are bundled too (fewer files to find and load at start), except native addons and the
 * packages in `keepOut`; an external import keeps its bare name when Node finds the same file
 * from dist/, else it becomes a relative path to the exact file (a nested node_modules copy).
 */
const dependencies = (outdir: string, keepOut: Set<string>): Plugin => ({
  name: 'dependencies',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, async (args) => {
      if (args.pluginData === 'resolving' || args.path.startsWith('node:')) return undefined;
      const r = await b.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, importer: args.importer, pluginData: 'resolving' });
      // Unresolvable: esbuild's own handling (an optional require() in a try block stays a require).
      if (r.errors.length > 0) return undefined;
      if (r.external || !r.path.includes(NODE_MODULES)) return r;
      const root = packageRoot(r.path);
      if (!keepOut.has(root) && !isNative(root)) return r;
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

/** The command's entry point. */
export const CLI_ENTRY = join(REPO_ROOT, 'packages', 'cli', 'src', 'main.ts');

/**
 * Builds the command into `outdir` (default {@link CLI_DIST}), emptied first, from `entry`
 * (default {@link CLI_ENTRY}; the tests give their own). The output must sit inside the
 * repository, so that its imports of node_modules packages resolve. Refuses (and leaves no
 * output) when the bundle would carry a test-only module ({@link testOnlyInputs}).
 * Returns a one-line summary.
 */
export async function buildCli(outdir = CLI_DIST, entry = CLI_ENTRY): Promise<string> {
  await rm(outdir, { recursive: true, force: true });
  await mkdir(outdir, { recursive: true }); // resolutions from dist/ are asked before it is written
  // First pass, written nowhere: which bundled dependency files find files next to themselves
  // (Swagger UI's static files, pino's transport worker)? Their packages stay external.
  const probe = await build({ ...options(outdir, new Set(), entry), write: false, sourcemap: false });
  const keepOut = new Set<string>();
  for (const input of Object.keys(probe.metafile.inputs)) {
    const file = join(REPO_ROOT, input);
    if (file.includes(NODE_MODULES) && SELF_RELATIVE.test(readFileSync(file, 'utf8'))) keepOut.add(packageRoot(file));
  }
  const result = await build(options(outdir, keepOut, entry));
  const testOnly = testOnlyInputs(Object.keys(result.metafile.inputs));
  if (testOnly.length > 0) {
    await rm(outdir, { recursive: true, force: true });
    throw new Error(`the command would carry test-only modules (an export of a package's index reaches them): ${testOnly.join(', ')}`);
  }
  const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
  const files = Object.keys(result.metafile.outputs).filter((f) => f.endsWith('.js')).length;
  const external = [...keepOut].map((r) => relative(join(REPO_ROOT, 'node_modules'), r)).sort();
  return `${relative(REPO_ROOT, outdir)}: ${files} files, ${Math.round(bytes / 1024)} KiB; kept in node_modules besides native addons: ${external.join(', ')}`;
}

/**
 * The workspace modules of `inputs` (the bundle's, relative to the repository) that only tests
 * use: anything under a package's `testing/` folder, or a `*.test.ts`. The release must carry
 * none (issue 29, finding 12: the agent's index exported its tgtd harness, and with it core's
 * test artifacts).
 */
export function testOnlyInputs(inputs: string[]): string[] {
  return inputs.filter((f) => /^packages\/[^/]+\/(src|test)\/(.*\/)?(testing\/|[^/]+\.test\.tsx?$)/.test(f.split(sep).join('/'))).sort();
}

function options(outdir: string, keepOut: Set<string>, entry: string) {
  return {
    absWorkingDir: REPO_ROOT,
    entryPoints: { main: entry },
    outdir,
    bundle: true,
    splitting: true,
    format: 'esm' as const,
    platform: 'node' as const,
    target: 'node20',
    sourcemap: 'linked' as const,
    chunkNames: '[name]-[hash]',
    tsconfig: join(REPO_ROOT, 'tsconfig.json'),
    plugins: [dependencies(outdir, keepOut), sourceRelativeUrls(outdir)],
    // Bundled CommonJS code calls require() (for Node's modules and the external ones).
    banner: { js: "import { createRequire as __ironlensCreateRequire } from 'node:module'; const require = __ironlensCreateRequire(import.meta.url);" },
    logLevel: 'warning' as const,
    metafile: true as const,
  } satisfies BuildOptions;
}
