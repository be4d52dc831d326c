/**
 * Disk-clone benchmark (issue 3): 100 workers each given a system disk cloned from a
 * 10 GiB sparse master holding 64 MiB of data, through the control plane's batch endpoint
 * (`POST /workers/luns/disk/batch`) and the real storage agent (`startAgent`, stgt
 * backend, a real tgtd) on a loop-mounted XFS with reflink. Then the same 100 workers get
 * a second disk from a 10 MiB master, to show a clone's time does not follow the master's
 * size. Root only (loop mount, tgtd).
 *
 *   npm run bench:disks      (node --import tsx scripts/bench-disk-clone.ts)
 *
 * Environment (optional): BENCH_DISK_WORKERS (default 100, at most 100: one /workers/batch
 * call), BENCH_CLONE_SAMPLES (direct clones timed per master, default 20).
 *
 * Traffic stays on 127.0.0.1; tgtd, the agent, the control plane and the mount are all
 * stopped or removed at the end, on failure and on Ctrl-C too.
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { exec, operationsMigrations, Store } from '@ironlens/core';
import { DiskImages, type RunningAgent, startAgent } from '@ironlens/agent';
import { buildMetalApp, createMetalServices, type MetalDatabase, type MetalStore, metalConfigFromEnv, metalMigrations } from '@ironlens/metal';
import type { FastifyInstance } from 'fastify';
import { freeTcpPort, type LoopXfs, mountLoopXfs, type RunningTgtd, startTgtd, unusedControlPort } from '@ironlens/agent/testing';
import { machine } from './bench/machine';

const WORKERS = Number(process.env.BENCH_DISK_WORKERS ?? 100);
const SAMPLES = Number(process.env.BENCH_CLONE_SAMPLES ?? 20);
const TOKEN = 'bench-cp-token';
const AGENT_TOKEN = 'bench-agent-token';
const BASE_IQN = 'iqn.2026-07.io.ironlens.bench';
const BIG = '_tpl_big.img';
const SMALL = '_tpl_small.img';
const log = (m: string) => process.stderr.write(`[bench:disks] ${m}\n`);
const seconds = (t0: number) => (performance.now() - t0) / 1000;

async function makeMasters(dir: string): Promise<void> {
  await exec(['dd', 'if=/dev/urandom', `of=${join(dir, SMALL)}`, 'bs=1M', 'count=10', 'status=none']);
  await exec(['truncate', '-s', '10G', join(dir, BIG)]);
  // 64 MiB of data in four 16 MiB runs spread over the 10 GiB.
  for (const gib of [0, 3, 6, 9]) {
    await exec(['dd', 'if=/dev/urandom', `of=${join(dir, BIG)}`, 'bs=1M', 'count=16', `seek=${gib * 1024}`, 'conv=notrunc', 'status=none']);
  }
  await exec(['sync']);
}

/** Median seconds of `n` direct `DiskImages.clone` calls (the agent's own clone, no HTTP). */
async function directClone(images: DiskImages, master: string, n: number): Promise<{ median: number; mode: string }> {
  const times: number[] = [];
  let mode = '';
  for (let i = 0; i < n; i++) {
    const dst = join(images.dir, `direct-${master.replace(/\W/g, '')}-${i}.img`);
    const t0 = performance.now();
    mode = await images.clone(join(images.dir, master), dst);
    times.push(seconds(t0));
    rmSync(dst);
  }
  times.sort((a, b) => a - b);
  return { median: times[Math.floor(times.length / 2)], mode };
}

async function main(): Promise<void> {
  if (!Number.isInteger(WORKERS) || WORKERS < 1 || WORKERS > 100) throw new Error('BENCH_DISK_WORKERS: 1..100');
  if (process.getuid?.() !== 0) throw new Error('needs root (loop-mounted XFS, tgtd)');
  const work = mkdtempSync(join(tmpdir(), 'ironlens-bench-disks-'));
  let xfs: LoopXfs | undefined;
  let tgtd: RunningTgtd | undefined;
  let agent: RunningAgent | undefined;
  let app: FastifyInstance | undefined;
  let store: MetalStore | undefined;
  let cleaned = false;
  const cleanup = async () => {
    if (cleaned) return;
    cleaned = true;
    await app?.close().catch(() => {});
    await store?.close().catch(() => {});
    await agent?.close().catch(() => {});
    await tgtd?.stop().catch(() => {});
    await xfs?.unmount().catch(() => {});
    rmSync(work, { recursive: true, force: true });
  };
  const bail = (sig: string) => {
    log(`${sig}: cleaning up`);
    cleanup().finally(() => process.exit(130));
  };
  process.once('SIGINT', bail);
  process.once('SIGTERM', bail);

  try {
    const m = machine();
    log(`machine: nproc ${availableParallelism()}, ${m.cpu}, Node ${m.node}; load average ${loadavg()[0].toFixed(2)}`);
    xfs = await mountLoopXfs(work, '24G');
    const diskDir = xfs.mountpoint;
    await makeMasters(diskDir);
    log(`loop XFS (reflink=1) at ${diskDir}; masters ${BIG} (10 GiB sparse, 64 MiB data) and ${SMALL} (10 MiB)`);

    const controlPort = unusedControlPort();
    tgtd = await startTgtd({ controlPort, portal: `127.0.0.1:${await freeTcpPort()}`, logFile: join(work, 'tgtd.log') });
    agent = await startAgent({
      DISK_DIR: diskDir,
      IPXE_AGENT_BACKEND: 'stgt',
      IPXE_AGENT_TGT_CONTROL_PORT: String(controlPort),
      IPXE_AGENT_BASE_IQN: BASE_IQN,
      IPXE_AGENT_TOKEN: AGENT_TOKEN,
      IRONLENS_AGENT_LISTEN: '127.0.0.1:0',
      IRONLENS_LOG_LEVEL: 'silent',
    });
    log(`tgtd on control port ${controlPort} (portal ${tgtd.portal}), agent at ${agent.url}`);

    const dataDir = join(work, 'cp');
    store = await Store.open<MetalDatabase>({ file: join(dataDir, 'ironlens.db'), migrations: [...operationsMigrations, ...metalMigrations] });
    const services = createMetalServices({ store, config: metalConfigFromEnv({ IPXE_CP_DNSMASQ_RELOAD: 'false', IPXE_CP_TOKEN: TOKEN, IPXE_CP_AGENT_TIMEOUT: '120' }, dataDir) });
    app = await buildMetalApp({ services, http: { docs: false } });
    const cp = await app.listen({ host: '127.0.0.1', port: 0 });
    const api = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${cp}${path}`, {
        method,
        headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
      return JSON.parse(text);
    };

    await api('POST', '/agents', { id: 'stor-1', base_url: agent.url, token: AGENT_TOKEN, iscsi_server: '127.0.0.1', role: { disk: true, cd: false }, tags: ['storage', 'stgt'] });
    const created = await api('POST', '/workers/batch', { count: WORKERS, name_prefix: 'bench-' });
    const ids: string[] = created.succeeded.map((w: { worker_id: string }) => w.worker_id);
    if (ids.length !== WORKERS) throw new Error(`created ${ids.length} workers, expected ${WORKERS}: ${JSON.stringify(created.failed)}`);
    const targets = ids.map((worker_id) => ({ worker_id, agent: 'stor-1' }));

    const rows: string[] = [];
    for (const [master, os, label] of [
      [BIG, 'ubuntu', '10 GiB sparse, 64 MiB data'],
      [SMALL, 'debian', '10 MiB'],
    ] as const) {
      const t0 = performance.now();
      const out = await api('POST', '/workers/luns/disk/batch', { type: 'master', name: master, os, targets });
      const total = seconds(t0);
      if (out.succeeded.length !== WORKERS) throw new Error(`${master}: ${out.succeeded.length} of ${WORKERS} disks made: ${JSON.stringify(out.failed.slice(0, 3))}`);
      const direct = await directClone(new DiskImages(diskDir), master, SAMPLES);
      rows.push(`| ${label} | ${WORKERS} | ${total.toFixed(2)} | ${((1000 * total) / WORKERS).toFixed(1)} | ${(1000 * direct.median).toFixed(2)} (${direct.mode}) |`);
      log(`${label}: ${WORKERS} disks in ${total.toFixed(2)} s; a direct clone ${(1000 * direct.median).toFixed(2)} ms (${direct.mode})`);
    }

    // What landed: every target in tgtd, every disk file at its full apparent size, and
    // the file system holding the data once (reflinks share the masters' extents).
    const show = await exec(['tgtadm', '-C', String(controlPort), '--lld', 'iscsi', '--mode', 'target', '--op', 'show']);
    const targetCount = (show.stdout.match(/^Target \d+:/gm) ?? []).length;
    const images = readdirSync(diskDir).filter((f) => f.startsWith('bench-') && f.endsWith('.img'));
    const apparent = images.reduce((a, f) => a + statSync(join(diskDir, f)).size, 0);
    const df = (await exec(['df', '--output=used', '-B1M', diskDir])).stdout.trim().split('\n').pop()?.trim();
    const vars = (await (await fetch(`${cp}/boot-vars?hostname=${ids[0]}&format=json`)).json()) as Record<string, unknown>;

    const out = [
      `machine: nproc ${availableParallelism()}; CPU ${m.cpu}; Node ${m.node}; kernel ${m.kernel}`,
      `run: ${WORKERS} workers, one POST /workers/luns/disk/batch per master, agent stgt on a loop XFS (reflink=1)`,
      '',
      '| master | disks | batch total s | per disk ms | one direct clone ms (mode) |',
      '| --- | ---: | ---: | ---: | ---: |',
      ...rows,
      '',
      `tgtd targets: ${targetCount}; disk files: ${images.length}, apparent size ${(apparent / 2 ** 30).toFixed(1)} GiB; XFS used: ${df} MiB (masters included)`,
      `boot-vars of ${ids[0]}: ${JSON.stringify(vars)}`,
    ].join('\n');
    process.stdout.write(`${out}\n`);
    if (targetCount !== 2 * WORKERS) throw new Error(`tgtd shows ${targetCount} targets, expected ${2 * WORKERS}`);
  } finally {
    await cleanup();
  }
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    process.stderr.write(`[bench:disks] failed: ${err.stack ?? err.message}\n`);
    process.exit(1);
  },
);
