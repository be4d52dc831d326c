/**
 * Compiles the `ironlens` command to JavaScript: one esbuild bundle of packages/cli/src/main.ts
 * into packages/cli/dist/, split at every dynamic `import()` so a subcommand's modules load
 * only when it runs. Workspace packages (whatever lives in packages/*) are bundled; every
 * package from node_modules (better-sqlite3's native addon, fastify, …) stays external and is
 * loaded from node_modules at run time.
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
import { readFile, rm } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';

/** The repository's root. */
export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
/** Where the `ironlens` bin looks for the compiled command. */
export const CLI_DIST = join(REPO_ROOT, 'packages', 'cli', 'dist');
const packagesDir = join(REPO_ROOT, 'packages') + sep;

/** Bare imports that resolve into node_modules stay imports; workspace packages are bundled. */
const externalDependencies: Plugin = {
  name: 'external-dependencies',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, async (args) => {
      if (args.pluginData === 'resolving' || args.path.startsWith('node:')) return undefined;
      const r = await b.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, importer: args.importer, pluginData: 'resolving' });
      if (r.errors.length > 0) return { errors: r.errors };
      if (r.path.includes(`${sep}node_modules${sep}`) || !r.path.startsWith(packagesDir)) return { path: args.path, external: true };
      return r;
    });
  },
};

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
    plugins: [externalDependencies, sourceRelativeUrls(outdir)],
    logLevel: 'warning',
    metafile: true,
  });
  const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
  const files = Object.keys(result.metafile.outputs).filter((f) => f.endsWith('.js')).length;
  return `${relative(REPO_ROOT, outdir)}: ${files} files, ${Math.round(bytes / 1024)} KiB`;
}
