/**
 * Builds etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok
 * from the Go module proxy into a cache directory, once per pinned version set.
 *
 * Layout (default root `~/.cache/ironlens/kube`, override with IRONLENS_KUBE_CACHE):
 *   <root>/<k8s version>/bin/{etcd,kube-apiserver,kube-controller-manager,kube-scheduler,kwok}
 *   <root>/<k8s version>/bin/build.json       stamp: versions + recipe hash + timings
 *   <root>/<k8s version>/src/{kubernetes,etcd,kwok}/go.mod   generated wrapper modules
 *   <root>/<k8s version>/build.lock/          held while a build runs (mkdir lock)
 *
 * `k8s.io/kubernetes` cannot be `go install`-ed: its go.mod replaces every staging
 * module (k8s.io/api, ...) with `./staging/src/...`. A wrapper module requires
 * k8s.io/kubernetes and replaces each staging module with its published tag
 * (v0.<minor>.<patch>). etcd's server module has the same shape (`../api` etc.),
 * replaced with the same etcd tag. All processes are started with argument arrays.
 */
import { createHash } from 'node:crypto';
import { spawn, execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile, stat, readdir, rename } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  ETCD_VERSION,
  KUBERNETES_VERSION,
  KWOK_VERSION,
  MIN_GO_VERSION,
  kubeMinor,
  stagingVersion,
} from './versions.config';
import { sleep } from '@ironlens/core/testing';

const execFileP = promisify(execFile);

export interface KubeBinaries {
  dir: string;
  etcd: string;
  kubeApiserver: string;
  kubeControllerManager: string;
  kubeScheduler: string;
  kwok: string;
  /** kwok Stage objects (node-initialize, node-heartbeat-with-lease, pod-ready/complete/delete) copied from the pinned kwok module. */
  kwokStages: string;
  versions: { kubernetes: string; etcd: string; kwok: string };
}

export interface BuildOptions {
  /** Cache root; default IRONLENS_KUBE_CACHE or ~/.cache/ironlens/kube. */
  cacheRoot?: string;
  /** Progress sink; default writes `[kube-harness] ...` lines to stderr. */
  log?: (line: string) => void;
  /** Rebuild even when the stamp matches. */
  force?: boolean;
}

/** Bump when the build recipe (flags, wrapper shape, package list) changes. */
const RECIPE_REVISION = 1;

const KUBE_PACKAGES = [
  'k8s.io/kubernetes/cmd/kube-apiserver',
  'k8s.io/kubernetes/cmd/kube-controller-manager',
  'k8s.io/kubernetes/cmd/kube-scheduler',
];

export function defaultCacheRoot(): string {
  return process.env.IRONLENS_KUBE_CACHE || join(homedir(), '.cache', 'ironlens', 'kube');
}

function recipeHash(): string {
  return createHash('sha256')
    .update(JSON.stringify({ RECIPE_REVISION, KUBERNETES_VERSION, ETCD_VERSION, KWOK_VERSION, KUBE_PACKAGES }))
    .digest('hex')
    .slice(0, 16);
}

export function binariesFor(dir: string): KubeBinaries {
  const bin = join(dir, 'bin');
  return {
    dir: bin,
    etcd: join(bin, 'etcd'),
    kubeApiserver: join(bin, 'kube-apiserver'),
    kubeControllerManager: join(bin, 'kube-controller-manager'),
    kubeScheduler: join(bin, 'kube-scheduler'),
    kwok: join(bin, 'kwok'),
    kwokStages: join(bin, 'kwok-stages.yaml'),
    versions: { kubernetes: KUBERNETES_VERSION, etcd: ETCD_VERSION, kwok: KWOK_VERSION },
  };
}

function defaultLog(line: string): void {
  process.stderr.write(`[kube-harness] ${line}\n`);
}

/** Returns the binaries if the cache holds a complete build of the pinned versions. */
export async function cachedKubeBinaries(cacheRoot = defaultCacheRoot()): Promise<KubeBinaries | undefined> {
  const dir = join(cacheRoot, KUBERNETES_VERSION);
  const bins = binariesFor(dir);
  try {
    const stamp = JSON.parse(await readFile(join(bins.dir, 'build.json'), 'utf8')) as { recipe?: string };
    if (stamp.recipe !== recipeHash()) return undefined;
    for (const p of [bins.etcd, bins.kubeApiserver, bins.kubeControllerManager, bins.kubeScheduler, bins.kwok, bins.kwokStages]) {
      if (!existsSync(p)) return undefined;
    }
    return bins;
  } catch {
    return undefined;
  }
}

/**
 * Ensures the pinned binaries exist, building them cold if needed (tens of
 * minutes on 2 cores). Safe to call from several processes at once: one builds,
 * the others wait on the lock.
 */
export async function ensureKubeBinaries(opts: BuildOptions = {}): Promise<KubeBinaries> {
  const log = opts.log ?? defaultLog;
  const cacheRoot = opts.cacheRoot ?? defaultCacheRoot();
  if (!opts.force) {
    const hit = await cachedKubeBinaries(cacheRoot);
    if (hit) return hit;
  }
  const dir = join(cacheRoot, KUBERNETES_VERSION);
  await mkdir(dir, { recursive: true });
  const release = await acquireLock(join(dir, 'build.lock'), log);
  try {
    if (!opts.force) {
      const hit = await cachedKubeBinaries(cacheRoot);
      if (hit) return hit; // another process built it while we waited
    }
    return await build(dir, log);
  } finally {
    await release();
  }
}

async function acquireLock(lockDir: string, log: (l: string) => void): Promise<() => Promise<void>> {
  const started = Date.now();
  let lastNote = 0;
  for (;;) {
    try {
      await mkdir(lockDir);
      await writeFile(join(lockDir, 'pid'), String(process.pid));
      return async () => {
        await rm(lockDir, { recursive: true, force: true });
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      let owner = 0;
      try {
        owner = Number(await readFile(join(lockDir, 'pid'), 'utf8'));
      } catch {
        /* lock dir made but pid not yet written */
      }
      if (owner && !pidAlive(owner)) {
        log(`removing stale build lock of dead pid ${owner}`);
        await rm(lockDir, { recursive: true, force: true });
        continue;
      }
      if (Date.now() - lastNote > 60_000) {
        lastNote = Date.now();
        log(`waiting for the build running in pid ${owner || '?'} (${Math.round((Date.now() - started) / 1000)} s)`);
      }
      await sleep(2000);
    }
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Checks that `go` exists and is new enough; throws a message a developer can act on. */
export async function checkGo(): Promise<string> {
  let out: string;
  try {
    out = (await execFileP('go', ['version'], { env: goEnv() })).stdout.trim();
  } catch (e) {
    throw new Error(
      `kube-harness needs the Go toolchain (>= ${MIN_GO_VERSION}) on PATH to build the Kubernetes control plane ` +
        `from the Go module proxy, and running \`go version\` failed: ${(e as Error).message}`,
    );
  }
  const m = /go(\d+)\.(\d+)(?:\.(\d+))?/.exec(out);
  const want = MIN_GO_VERSION.split('.').map(Number);
  if (!m) throw new Error(`cannot parse \`go version\` output: ${out}`);
  const have = [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)];
  for (let i = 0; i < 3; i++) {
    if (have[i] > want[i]) break;
    if (have[i] < want[i]) {
      throw new Error(`kube-harness needs Go >= ${MIN_GO_VERSION}; found: ${out}`);
    }
  }
  return out;
}

function goEnv(): NodeJS.ProcessEnv {
  const flags = (process.env.GOFLAGS ?? '').split(/\s+/).filter(Boolean);
  if (!flags.includes('-trimpath')) flags.push('-trimpath');
  if (!flags.some((f) => f.startsWith('-buildvcs'))) flags.push('-buildvcs=false');
  return {
    ...process.env,
    GOFLAGS: flags.join(' '),
    CGO_ENABLED: '0', // static binaries, as the Kubernetes release builds them; no C toolchain needed
    GOTOOLCHAIN: process.env.GOTOOLCHAIN || 'local',
    GOWORK: 'off',
  };
}

async function build(dir: string, log: (l: string) => void): Promise<KubeBinaries> {
  const t0 = Date.now();
  const goVersion = await checkGo();
  log(`cold build of kubernetes ${KUBERNETES_VERSION}, etcd ${ETCD_VERSION}, kwok ${KWOK_VERSION} with ${goVersion}`);
  log(`into ${dir} (expect ~30-40 min on 2 cores with an empty Go build cache)`);
  const bins = binariesFor(dir);
  const staging = join(dir, 'bin.partial');
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  const timings: Record<string, number> = {};

  // etcd and kwok first: they are small and a failure there shows quickly.
  let t = Date.now();
  await buildModule({
    name: 'etcd',
    srcDir: join(dir, 'src', 'etcd'),
    mainModule: 'go.etcd.io/etcd/server/v3',
    version: ETCD_VERSION,
    replaceVersion: () => ETCD_VERSION,
    packages: ['go.etcd.io/etcd/server/v3'],
    ldflags: ['-s', '-w'],
    out: join(staging, 'etcd'),
    log,
  });
  timings.etcd = Date.now() - t;

  t = Date.now();
  const kwokDir = await buildModule({
    name: 'kwok',
    srcDir: join(dir, 'src', 'kwok'),
    mainModule: 'sigs.k8s.io/kwok',
    version: KWOK_VERSION,
    replaceVersion: () => KWOK_VERSION,
    packages: ['sigs.k8s.io/kwok/cmd/kwok'],
    ldflags: ['-s', '-w'], // pkg/consts.Version already defaults to the tag's version
    out: join(staging, 'kwok'),
    log,
  });
  timings.kwok = Date.now() - t;
  // The kwok binary runs no stage unless given some (kwokctl generates these same defaults).
  const stageFiles = [
    'kustomize/stage/node/fast/node-initialize.yaml',
    'kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml',
    'kustomize/stage/pod/fast/pod-ready.yaml',
    'kustomize/stage/pod/fast/pod-complete.yaml',
    'kustomize/stage/pod/fast/pod-delete.yaml',
  ];
  const stages = await Promise.all(stageFiles.map((f) => readFile(join(kwokDir, f), 'utf8')));
  await writeFile(join(staging, 'kwok-stages.yaml'), stages.map((s) => s.trim()).join('\n---\n') + '\n');

  t = Date.now();
  const stagingTag = stagingVersion(KUBERNETES_VERSION);
  await buildModule({
    name: 'kubernetes',
    srcDir: join(dir, 'src', 'kubernetes'),
    mainModule: 'k8s.io/kubernetes',
    version: KUBERNETES_VERSION,
    replaceVersion: () => stagingTag,
    packages: KUBE_PACKAGES,
    ldflags: [
      '-s',
      '-w',
      `-X k8s.io/component-base/version.gitVersion=${KUBERNETES_VERSION}`,
      '-X k8s.io/component-base/version.gitMajor=1',
      `-X k8s.io/component-base/version.gitMinor=${kubeMinor(KUBERNETES_VERSION)}`,
      '-X k8s.io/component-base/version.gitTreeState=clean',
    ],
    out: `${staging}/`, // several packages: `-o dir/` so shared packages compile once
    log,
  });
  timings.kubernetes = Date.now() - t;

  const stamp = {
    recipe: recipeHash(),
    versions: bins.versions,
    go: goVersion,
    builtAt: new Date().toISOString(),
    secondsTotal: Math.round((Date.now() - t0) / 1000),
    seconds: Object.fromEntries(Object.entries(timings).map(([k, v]) => [k, Math.round(v / 1000)])),
  };
  await writeFile(join(staging, 'build.json'), `${JSON.stringify(stamp, null, 2)}\n`);
  await rm(bins.dir, { recursive: true, force: true });
  await rename(staging, bins.dir);
  let bytes = 0;
  for (const f of await readdir(bins.dir)) bytes += (await stat(join(bins.dir, f))).size;
  log(`build done in ${stamp.secondsTotal} s (${JSON.stringify(stamp.seconds)}); binaries ${(bytes / 2 ** 20).toFixed(0)} MiB`);
  return bins;
}

interface ModuleBuild {
  name: string;
  srcDir: string;
  mainModule: string;
  version: string;
  /** Version to pin a module that the main module's go.mod replaces with a relative path. */
  replaceVersion: (modulePath: string) => string;
  packages: string[];
  ldflags: string[];
  out: string;
  log: (l: string) => void;
}

/** Parses `replace X => ./path` / `../path` directives (block or single-line) of a go.mod. */
export function relativeReplaces(goMod: string): string[] {
  const out: string[] = [];
  const lines = goMod.split('\n');
  let inBlock = false;
  for (const raw of lines) {
    const line = raw.replace(/\/\/.*$/, '').trim();
    if (/^replace\s*\($/.test(line)) {
      inBlock = true;
      continue;
    }
    if (inBlock && line === ')') {
      inBlock = false;
      continue;
    }
    const body = inBlock ? line : /^replace\s+(.*)$/.exec(line)?.[1];
    if (!body) continue;
    const m = /^(\S+)(?:\s+\S+)?\s+=>\s+(\.\.?\/\S*)$/.exec(body);
    if (m && !m[2].includes('FORBIDDEN')) out.push(m[1]);
  }
  return out;
}

export function wrapperGoMod(mainModule: string, version: string, replaced: Array<[string, string]>): string {
  const lines = [
    '// Generated by @ironlens/kube-harness; not committed. Builds a released module',
    '// whose own go.mod replaces its sibling modules with relative paths.',
    `module ironlens.local/kube-harness-build/${mainModule.split('/').pop()}`,
    '',
    'go 1.26.0',
    '',
    `require ${mainModule} ${version}`,
  ];
  if (replaced.length) {
    lines.push('', 'replace (');
    for (const [mod, v] of replaced) lines.push(`\t${mod} => ${mod} ${v}`);
    lines.push(')');
  }
  return `${lines.join('\n')}\n`;
}

/** Builds one wrapper module; returns the main module's source dir in the module cache. */
async function buildModule(b: ModuleBuild): Promise<string> {
  const env = goEnv();
  await mkdir(b.srcDir, { recursive: true });
  b.log(`${b.name}: fetching ${b.mainModule}@${b.version} from the Go module proxy`);
  const dl = await run('go', ['mod', 'download', '-json', `${b.mainModule}@${b.version}`], {
    cwd: b.srcDir,
    env,
    log: b.log,
    label: b.name,
    capture: true,
  });
  const info = JSON.parse(dl) as { GoMod?: string; Dir?: string; Error?: string };
  if (info.Error || !info.GoMod) throw new Error(`go mod download ${b.mainModule}@${b.version}: ${info.Error ?? 'no GoMod'}`);
  const replaced = relativeReplaces(await readFile(info.GoMod, 'utf8')).map(
    (m) => [m, b.replaceVersion(m)] as [string, string],
  );
  await writeFile(join(b.srcDir, 'go.mod'), wrapperGoMod(b.mainModule, b.version, replaced));
  await rm(join(b.srcDir, 'go.sum'), { force: true });
  b.log(`${b.name}: resolving dependencies (${replaced.length} replaced sibling modules)`);
  await run('go', ['get', ...b.packages.map((p) => `${p}@${b.version}`)], {
    cwd: b.srcDir,
    env,
    log: b.log,
    label: b.name,
  });
  b.log(`${b.name}: compiling ${b.packages.length} package(s)`);
  await run('go', ['build', '-v', '-ldflags', b.ldflags.join(' '), '-o', b.out, ...b.packages], {
    cwd: b.srcDir,
    env,
    log: b.log,
    label: b.name,
    countLines: true,
  });
  return info.Dir ?? '';
}

interface RunOpts {
  cwd: string;
  env: NodeJS.ProcessEnv;
  log: (l: string) => void;
  label: string;
  capture?: boolean;
  /** `go build -v` prints one line per compiled package: report the count instead of the lines. */
  countLines?: boolean;
}

function run(cmd: string, args: string[], o: RunOpts): Promise<string> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const child = spawn(cmd, args, { cwd: o.cwd, env: o.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let tail: string[] = [];
    let lines = 0;
    let downloads = 0;
    const onErr = (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n')) {
        if (!line) continue;
        tail.push(line);
        if (tail.length > 40) tail = tail.slice(-40);
        if (line.startsWith('go: downloading')) downloads++;
        else if (o.countLines && !line.startsWith('#') && !line.includes(' ')) lines++;
        else if (!o.countLines) o.log(`${o.label}: ${line}`);
      }
    };
    child.stdout.on('data', (c: Buffer) => {
      if (o.capture) stdout += c.toString();
      else onErr(c);
    });
    child.stderr.on('data', onErr);
    const ticker = setInterval(() => {
      const s = Math.round((Date.now() - started) / 1000);
      o.log(`${o.label}: still running \`${cmd} ${args[0]}\` (${s} s, ${downloads} modules downloaded${o.countLines ? `, ${lines} packages compiled` : ''})`);
    }, 30_000);
    child.on('error', (e) => {
      clearInterval(ticker);
      reject(new Error(`${cmd} ${args.join(' ')}: ${e.message}`));
    });
    child.on('close', (code, signal) => {
      clearInterval(ticker);
      if (code === 0) {
        if (o.countLines) o.log(`${o.label}: compiled ${lines} packages in ${Math.round((Date.now() - started) / 1000)} s`);
        resolve(stdout);
      } else {
        reject(
          new Error(
            `${cmd} ${args.join(' ')} (in ${o.cwd}) exited with ${code ?? signal}:\n${tail.join('\n')}`,
          ),
        );
      }
    });
  });
}
