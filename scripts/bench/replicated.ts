/**
 * The replicated boot storm (issue 12): `ironlens serve` processes of the compiled command on
 * one throw-away PostgreSQL, behind a real nginx, 1, 2 and 3 of them, beside one `ironlens
 * serve` on SQLite holding the same fleet, all in the same run and measured by the same wrk.
 *
 * Every process listens on its own 127.0.0.x address; each setup is checked to answer the
 * expected iPXE text for a sample of the fleet before it is measured. Everything started here
 * is stopped by `stop()` (by pid / process group).
 */
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { type Balancer, buildCommand, type Replica, startBalancer, startReplica } from '@ironlens/cli/testing';
import { ALL_MIGRATIONS } from '@ironlens/cli';
import { artifactPath, type Postgres, startPostgres } from '@ironlens/core/testing';
import { bootScriptOf, bootVarsPath, REPORT_TEXT, reportPath } from './fleet';
import { seedFleet } from './seed';

export interface Target {
  /** What the table shows: `sqlite ×1 direct`, `postgres ×2 via nginx`… */
  label: string;
  url: string;
  /** Every process that serves this target (replicas, nginx, PostgreSQL): their CPU is summed. */
  pids: number[];
}

export interface Replicated {
  targets: Target[];
  stop(): Promise<void>;
  /** At once, for an exit handler: SIGKILL to every process group, PostgreSQL stopped. */
  killNow(): void;
}

const TOKEN = 'bench-token';

/** The postmaster of the throw-away cluster on `port` (its backends are its children). */
function postmasterPid(port: number): number[] {
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const cmd = readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0');
      if (cmd[0].endsWith('/postgres') && cmd.includes(`port=${port}`)) return [Number(d)];
    } catch {}
  }
  return [];
}

/**
 * Starts the setups named in `setups`: `sqlite` (one replica on SQLite, asked directly),
 * `postgres-direct` (one replica on PostgreSQL, asked directly), `nginx-N` (N replicas on
 * PostgreSQL behind nginx).
 */
export async function startReplicated(work: string, workers: number, setups: string[], log: (m: string) => void): Promise<Replicated> {
  const started: Array<{ stop(): Promise<void>; kill9(): void }> = [];
  let pg: Postgres | undefined;
  const buildRoot = artifactPath('bench-replicated-cli');
  const stop = async () => {
    await Promise.all(started.splice(0).map((p) => p.stop()));
    pg?.stop();
    rmSync(buildRoot, { recursive: true, force: true });
  };
  const killNow = () => {
    for (const p of started.splice(0)) p.kill9();
    pg?.stop();
    rmSync(buildRoot, { recursive: true, force: true });
  };
  try {
    const replicaCount = Math.max(0, ...setups.map((s) => (/^nginx-(\d)$/.exec(s) ? Number(s.slice(6)) : s === 'postgres-direct' ? 1 : 0)));
    const t0 = performance.now();
    const [bin, startedPg] = await Promise.all([buildCommand(buildRoot), replicaCount > 0 ? startPostgres() : Promise.resolve(undefined)]);
    pg = startedPg;
    log(`compiled the ironlens command${pg ? ' and started PostgreSQL' : ''} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    const env = { IPXE_CP_TOKEN: TOKEN, IPXE_CP_DNSMASQ_RELOAD: 'false', IRONLENS_SECRET_KEY: 'b'.repeat(64) };
    const targets: Target[] = [];

    if (setups.includes('sqlite')) {
      const dataDir = join(work, 'replicated-sqlite');
      mkdirSync(dataDir, { recursive: true });
      await seedFleet(join(dataDir, 'ironlens.db'), workers, ALL_MIGRATIONS);
      const r = await startReplica({ bin, name: 'sqlite', host: '127.0.0.20', dataDir, env });
      started.push(r);
      targets.push({ label: 'sqlite ×1 direct', url: r.boot, pids: [r.child.pid ?? 0] });
    }

    const replicas: Replica[] = [];
    if (pg && replicaCount > 0) {
      const url = await pg.createDatabase('ironlens_bench');
      const t1 = performance.now();
      await seedFleet({ url }, workers, ALL_MIGRATIONS);
      log(`seeded ${workers} workers into PostgreSQL in ${((performance.now() - t1) / 1000).toFixed(1)} s`);
      for (let i = 0; i < replicaCount; i++) {
        const r = await startReplica({ bin, name: `pg-${i + 1}`, host: `127.0.0.${21 + i}`, dataDir: join(work, `replicated-pg-${i + 1}`), env: { ...env, IRONLENS_DATABASE_URL: url } });
        started.push(r);
        replicas.push(r);
      }
      const pgPids = postmasterPid(pg.port);
      if (setups.includes('postgres-direct')) targets.push({ label: 'postgres ×1 direct', url: replicas[0].boot, pids: [replicas[0].child.pid ?? 0, ...pgPids] });
      for (const s of setups) {
        const m = /^nginx-(\d)$/.exec(s);
        if (!m) continue;
        const n = Number(m[1]);
        const prefix = join(work, `nginx-${n}`);
        mkdirSync(prefix, { recursive: true });
        const nginx: Balancer = await startBalancer(
          prefix,
          replicas.slice(0, n).map((r) => ({ host: r.host, port: r.bootPort })),
        );
        started.push(nginx);
        targets.push({ label: `postgres ×${n} via nginx`, url: nginx.url, pids: [...replicas.slice(0, n).map((r) => r.child.pid ?? 0), nginx.child.pid ?? 0, ...pgPids] });
      }
    }
    for (const t of targets) await verifyTarget(t, workers);
    log(`replicated setups answer the expected iPXE text for a sample of 50 workers: ${targets.map((t) => `${t.label} ${t.url}`).join(', ')}`);
    return { targets, stop, killNow };
  } catch (err) {
    await stop();
    throw err;
  }
}

async function verifyTarget(t: Target, workers: number): Promise<void> {
  const sample = [1, workers, ...Array.from({ length: 48 }, () => 1 + Math.floor(Math.random() * workers))];
  for (const i of sample) {
    // Through nginx, several rounds reach every replica.
    for (let k = 0; k < 3; k++) {
      const res = await fetch(`${t.url}${bootVarsPath(i)}`);
      const body = await res.text();
      if (res.status !== 200 || body !== bootScriptOf(i)) throw new Error(`${t.label}: ${bootVarsPath(i)} answered ${res.status} ${JSON.stringify(body)}`);
    }
  }
  const rep = await fetch(`${t.url}${reportPath(1)}`);
  const text = await rep.text();
  if (rep.status !== 200 || text !== REPORT_TEXT) throw new Error(`${t.label}: /devices/report answered ${rep.status} ${JSON.stringify(text)}`);
}
