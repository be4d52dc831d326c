/**
 * Rollout benchmark (issue 31): 1,000 workers rolled from master A to master B with
 * `max_unavailable: 10%` (10 batches of 100), through the real services on a real store
 * (SQLite in a temp dir: the rollout's job, its per-worker rows, the ledger's disk switches, the
 * operations log, the proof of boot, the host reports), with stand-ins at the edges answering at
 * realistic latencies:
 *
 * - BMCs (`FakeFleet`): every call `BENCH_BMC_MS` (default 250 ms, a Redfish round trip), behind
 *   ironlens' own BMC scheduler (`IRONLENS_BMC_CONCURRENCY`, default 8 calls at once);
 * - machines (`FakeFleet`): the network boot as `boot.ipxe` does it, then `BENCH_BOOT_MS` (default
 *   2,000 ms, a stand-in for the minutes an OS takes: the figure does not change the control
 *   plane's own work) before the host report of the new image;
 * - the storage agent (`FakeAgent` over HTTP): a clone `BENCH_CLONE_MS` (default 300 ms), any other
 *   call `BENCH_AGENT_MS` (default 20 ms);
 * - the cluster (a stand-in `ClusterNodes`): cordon and uncordon 50 ms, a drain 500 ms, Ready 20 ms.
 *
 * Prints, per batch, its wall time; per worker, its time from start to done beside the sum of the
 * stand-ins' latencies on its path (what it waited for the world), the difference (the control
 * plane's share: its own work and the waits it imposes, the BMC scheduler's queue included), and
 * the process' CPU time per worker.
 *
 *   npm run bench:rollout          (node --import tsx scripts/bench-rollout.ts)
 *
 * BENCH_ROLLOUT_WORKERS (default 1000), BENCH_ROLLOUT_MAX_UNAVAILABLE (default 10%), IRONLENS_BMC_CONCURRENCY
 * (default 8, ironlens' own default: with 100 at once the BMC queue leaves the control plane's share).
 * In-process, no network beyond 127.0.0.1 (the stand-in agent's HTTP).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { jobsMigrations, operationsMigrations, Store } from '@ironlens/core';
import { buildMetalApp, createMetalServices, type MetalDatabase, metalConfigFromEnv, metalMigrations } from '@ironlens/metal';
import { FakeAgent, FakeClusterNodes, type FakeAgentCall, FakeFleet } from '@ironlens/metal/testing';
import { machine } from './bench/machine';

const WORKERS = Number(process.env.BENCH_ROLLOUT_WORKERS ?? 1000);
const MAX_UNAVAILABLE = process.env.BENCH_ROLLOUT_MAX_UNAVAILABLE ?? '10%';
const BMC_MS = Number(process.env.BENCH_BMC_MS ?? 250);
const BOOT_MS = Number(process.env.BENCH_BOOT_MS ?? 2000);
const CLONE_MS = Number(process.env.BENCH_CLONE_MS ?? 300);
const AGENT_MS = Number(process.env.BENCH_AGENT_MS ?? 20);
const NODE_MS = { cordon: 50, drain: 500, ready: 20, uncordon: 50 };
const A = '_tpl_a.img';
const B = '_tpl_b.img';
const log = (m: string) => process.stderr.write(`[bench:rollout] ${m}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The stand-ins' time each worker spent, by worker id. */
const standIn = new Map<string, number>();
const add = (worker: string | undefined, ms: number) => {
  if (worker) standIn.set(worker, (standIn.get(worker) ?? 0) + ms);
};

/** The cluster's stand-in at the latencies above, its time added to each worker's. */
class TimedNodes extends FakeClusterNodes {
  override async cordon(n: { cluster_id: string; name: string }) {
    await sleep(NODE_MS.cordon);
    add(n.name, NODE_MS.cordon);
    return super.cordon(n);
  }
  override async drain(n: { cluster_id: string; name: string }, o: Parameters<FakeClusterNodes['drain']>[1]) {
    await sleep(NODE_MS.drain);
    add(n.name, NODE_MS.drain);
    return super.drain(n, o);
  }
  override async ready(n: { cluster_id: string; name: string }) {
    await sleep(NODE_MS.ready);
    add(n.name, NODE_MS.ready);
    return super.ready(n);
  }
  override async uncordon(n: { cluster_id: string; name: string }) {
    await sleep(NODE_MS.uncordon);
    add(n.name, NODE_MS.uncordon);
    return super.uncordon(n);
  }
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((s.length * p) / 100))];
};
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'ironlens-bench-rollout-'));
  let latency = false;
  const workerOfIqn = (iqn: unknown) => (typeof iqn === 'string' ? /:([a-z0-9-]+)\.debian$/.exec(iqn)?.[1] : undefined);
  const agentMs = (c: FakeAgentCall) => {
    if (!latency) return 0;
    const ms = c.method === 'POST' && c.path === '/luns/disk' ? CLONE_MS : AGENT_MS;
    add(workerOfIqn((c.body as { iqn?: string } | null)?.iqn ?? c.query.iqn), ms);
    return ms;
  };
  const agent = await new FakeAgent({ masters: [A, B], latencyMs: agentMs }).start();
  const store = await Store.open<MetalDatabase>({ file: join(dir, 'ironlens.db'), migrations: [...operationsMigrations, ...jobsMigrations, ...metalMigrations] });
  const nodes = new TimedNodes();
  let fleet: FakeFleet | undefined;
  const services = createMetalServices({
    store,
    config: metalConfigFromEnv({ IPXE_CP_DNSMASQ_RELOAD: 'false', IRONLENS_REPORT_REGISTER_PER_MINUTE: '0', IRONLENS_BMC_CONCURRENCY: process.env.IRONLENS_BMC_CONCURRENCY ?? '8' }, dir),
    bmc: (c) => {
      // Each BMC call of the stand-in takes BMC_MS; its time goes to its machine's worker.
      const bmc = fleet!.connect(c);
      const host = c.driver === 'ipmi' ? c.host : '';
      const worker = /^bmc-(.+)\.bench$/.exec(host)?.[1];
      const timed =
        <A extends unknown[], R>(f: (...a: A) => Promise<R>) =>
        async (...a: A): Promise<R> => {
          if (latency) {
            await sleep(BMC_MS);
            add(worker, BMC_MS);
          }
          return f(...a);
        };
      return { powerState: timed(bmc.powerState), power: timed(bmc.power), setOneTimeNetworkBoot: timed(bmc.setOneTimeNetworkBoot) };
    },
    clusterNodes: nodes,
    rolloutPollMs: 2000,
  });
  const app = await buildMetalApp({ services });
  fleet = new FakeFleet({ app, agent });
  const inject = async (method: 'POST' | 'PUT', url: string, payload: unknown, want: number) => {
    const r = await app.inject({ method, url, payload: payload as object });
    if (r.statusCode !== want) throw new Error(`${method} ${url}: ${r.statusCode} ${r.body}`);
  };
  try {
    const t0 = performance.now();
    await inject('POST', '/agents', { id: 'ag1', base_url: agent.url, role: { disk: true, cd: false } }, 201);
    const ids: string[] = [];
    for (let i = 1; i <= WORKERS; i++) {
      const id = `b-${String(i).padStart(4, '0')}`;
      const mac = `52:54:00:${((i >> 16) & 0xff).toString(16).padStart(2, '0')}:${((i >> 8) & 0xff).toString(16).padStart(2, '0')}:${(i & 0xff).toString(16).padStart(2, '0')}`;
      await inject('POST', '/devices', { mac, bmc: { driver: 'ipmi', host: `bmc-${id}.bench`, username: 'admin', password: 'bench-pw' } }, 201);
      await inject('POST', '/workers', { worker_id: id, mac }, 200);
      await inject('POST', `/workers/${id}/luns/disk`, { type: 'master', os: 'debian', name: A }, 200);
      await inject('PUT', `/workers/${id}/default-os`, { os: 'debian' }, 200);
      fleet.add(mac, id, `bmc-${id}.bench`);
      await fleet.powerOn(mac);
      nodes.add(id, { pods: [`serving/model-${id}`] });
      ids.push(id);
    }
    log(`${WORKERS} workers on ${A}, each a node with a pod, in ${((performance.now() - t0) / 1000).toFixed(1)} s; rolling to ${B}, max_unavailable ${MAX_UNAVAILABLE}`);
    fleet.bootMs = BOOT_MS;
    latency = true;
    const cpu0 = process.cpuUsage();
    const start = performance.now();
    const created = await services.rollouts.create({ selector: { prefix: 'b-' }, master: B, max_unavailable: MAX_UNAVAILABLE });
    const done = await services.rollouts.settled(created.id);
    const wall = (performance.now() - start) / 1000;
    const cpu = process.cpuUsage(cpu0);
    if (done.state !== 'succeeded') throw new Error(`the rollout ended ${done.state}: ${done.reason}`);

    const rows: string[] = [];
    for (const b of done.batches) {
      const ws = done.workers.filter((w) => w.batch === b.index);
      const first = Math.min(...ws.map((w) => Date.parse(w.started_at!)));
      const last = Math.max(...ws.map((w) => Date.parse(w.finished_at!)));
      rows.push(`| ${b.index + 1} | ${ws.length} | ${((last - first) / 1000).toFixed(1)} |`);
    }
    const elapsed = done.workers.map((w) => (Date.parse(w.finished_at!) - Date.parse(w.started_at!)) / 1000);
    const calls = done.workers.map((w) => (standIn.get(w.worker_id) ?? 0) / 1000);
    // Each worker booted once (its stand-in boot starts while the BMC's state read-back of the cycle is answered).
    const waited = calls.map((c) => c + BOOT_MS / 1000);
    const share = elapsed.map((e, i) => e - waited[i]);
    const line = (name: string, xs: number[]) => `| ${name} | ${mean(xs).toFixed(2)} | ${pct(xs, 50).toFixed(2)} | ${pct(xs, 95).toFixed(2)} |`;
    const m = machine();
    console.log(`\nrollout of ${WORKERS} workers, max_unavailable ${MAX_UNAVAILABLE} (batches of ${done.batch_size}): ${wall.toFixed(1)} s; ${m.nproc} cores (${m.cpu}), Node ${m.node}, load ${loadavg()[0].toFixed(2)}`);
    console.log(`stand-ins: BMC ${BMC_MS} ms a call (IRONLENS_BMC_CONCURRENCY ${services.config.bmcConcurrency}), boot ${BOOT_MS} ms, clone ${CLONE_MS} ms, other agent calls ${AGENT_MS} ms, cordon/drain/Ready/uncordon ${NODE_MS.cordon}/${NODE_MS.drain}/${NODE_MS.ready}/${NODE_MS.uncordon} ms\n`);
    console.log(['| batch | workers | wall (s) |', '| --- | --- | --- |', ...rows].join('\n'));
    console.log(
      [
        '',
        '| per worker (s) | mean | p50 | p95 |',
        '| --- | --- | --- | --- |',
        line('start to done', elapsed),
        line("the stand-ins' calls (BMC, agent, cluster)", calls),
        line("…and the machine's boot", waited),
        line("the control plane's share (elapsed − stand-ins)", share),
      ].join('\n'),
    );
    const cpuMs = (cpu.user + cpu.system) / 1000;
    console.log(`\nthe control plane's CPU time: ${(cpuMs / WORKERS).toFixed(1)} ms per worker (${(cpuMs / 1000).toFixed(1)} s user+system in all, the stand-ins in this process included)`);
  } finally {
    await services.rollouts.jobRunner.stop();
    services.power.stop();
    await app.close();
    await store.close();
    await agent.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  process.stderr.write(`[bench:rollout] failed: ${(e as Error).stack}\n`);
  process.exit(1);
});
