/**
 * Developer CLI:
 *   node --import tsx packages/kube-harness/src/cli.ts build [--force]
 *   node --import tsx packages/kube-harness/src/cli.ts up [--nodes test|bench|N] [--no-gpu] [--ip 127.0.0.x]
 *   node --import tsx packages/kube-harness/src/cli.ts down
 *   node --import tsx packages/kube-harness/src/cli.ts status
 *   node --import tsx packages/kube-harness/src/cli.ts bench [--nodes bench|N]   (prints JSON timings)
 *
 * `up` stays in the foreground until Ctrl-C (or `down` from another terminal) and
 * keeps its data in $TMPDIR/ironlens-kube-up (logs/, pki/, kubeconfig).
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { ensureKubeBinaries, cachedKubeBinaries } from './binaries.builder';
import { startKubeCluster } from './cluster.harness';
import type { FixtureSize } from './gpu.fixtures';
import { processAlive as alive } from '@ironlens/core';
import { sleep } from '@ironlens/core/testing';

const UP_DIR = join(tmpdir(), 'ironlens-kube-up');
const STATE = join(UP_DIR, 'state.json');

interface State {
  cliPid: number;
  pids: Record<string, number>;
  binDir: string;
  kubeconfigPath: string;
  server: string;
}

function flag(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

/** True if `pid` still runs a binary from `binDir` (guards against reused pids). */
function isOurs(pid: number, binDir: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0].startsWith(binDir);
  } catch {
    return false;
  }
}

async function main(): Promise<number> {
  const [cmd, ...args] = process.argv.slice(2);
  switch (cmd) {
    case 'build': {
      const b = await ensureKubeBinaries({ force: args.includes('--force') });
      console.log(`binaries in ${b.dir}: kubernetes ${b.versions.kubernetes}, etcd ${b.versions.etcd}, kwok ${b.versions.kwok}`);
      return 0;
    }
    case 'up': {
      if (existsSync(STATE)) {
        const st = JSON.parse(readFileSync(STATE, 'utf8')) as State;
        if (alive(st.cliPid)) {
          console.error(`a harness is already up (pid ${st.cliPid}); run \`down\` first`);
          return 1;
        }
      }
      await rm(UP_DIR, { recursive: true, force: true });
      await mkdir(UP_DIR, { recursive: true });
      const nodesArg = flag(args, '--nodes') ?? 'test';
      const nodes: FixtureSize = nodesArg === 'test' || nodesArg === 'bench' ? nodesArg : Number(nodesArg);
      const h = await startKubeCluster({ nodes, gpu: !args.includes('--no-gpu'), ip: flag(args, '--ip'), dataDir: UP_DIR });
      const st: State = { cliPid: process.pid, pids: h.pids, binDir: h.binaries.dir, kubeconfigPath: h.kubeconfigPath, server: h.server };
      await writeFile(STATE, JSON.stringify(st, null, 2));
      console.log(`\nserver      ${h.server}\nkubeconfig  ${h.kubeconfigPath}\nprometheus  ${h.prometheus.url}/api/v1/query\nlogs        ${join(UP_DIR, 'logs')}`);
      console.log(`\nexport KUBECONFIG=${h.kubeconfigPath}\n\nCtrl-C (or \`cli.ts down\`) stops it.`);
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await h.stop();
      await rm(STATE, { force: true });
      return 0;
    }
    case 'down': {
      if (!existsSync(STATE)) {
        console.log('no harness is up');
        return 0;
      }
      const st = JSON.parse(readFileSync(STATE, 'utf8')) as State;
      if (alive(st.cliPid)) {
        process.kill(st.cliPid, 'SIGTERM');
        for (let i = 0; i < 100 && alive(st.cliPid); i++) await sleep(100);
      }
      // If the `up` process died hard, its children may be left: stop them by pid.
      for (const [name, pid] of Object.entries(st.pids)) {
        if (alive(pid) && isOurs(pid, st.binDir)) {
          console.log(`stopping leftover ${name} (pid ${pid})`);
          process.kill(pid, 'SIGKILL');
        }
      }
      await rm(STATE, { force: true });
      console.log('down');
      return 0;
    }
    case 'bench': {
      const nodesArg = flag(args, '--nodes') ?? 'bench';
      const nodes: FixtureSize = nodesArg === 'test' || nodesArg === 'bench' ? nodesArg : Number(nodesArg);
      const t0 = Date.now();
      const h = await startKubeCluster({ nodes: 0, ip: flag(args, '--ip') });
      const controlPlaneMs = Date.now() - t0;
      try {
        const f = await h.loadGpuFixtures(nodes);
        const t1 = Date.now();
        const name = f.nodes[f.nodes.length - 1].name;
        const core = h.kubeConfig().makeApiClient(CoreV1Api);
        await core.connectGetNodeProxyWithPath({ name, path: 'stats/summary' });
        console.log(
          JSON.stringify({ nodes: f.nodes.length, controlPlaneMs, fixturesReadyMs: f.readyMs, summaryViaProxyMs: Date.now() - t1 }),
        );
      } finally {
        await h.stop();
      }
      return 0;
    }
    case 'status': {
      const b = await cachedKubeBinaries();
      console.log(b ? `binaries: ${b.dir} (${JSON.stringify(b.versions)})` : 'binaries: not built (run `build`)');
      if (existsSync(STATE)) {
        const st = JSON.parse(readFileSync(STATE, 'utf8')) as State;
        console.log(`up: ${alive(st.cliPid) ? 'yes' : 'stale state'} server ${st.server} kubeconfig ${st.kubeconfigPath}`);
      } else console.log('up: no');
      return 0;
    }
    default:
      console.error('usage: cli.ts build [--force] | up [--nodes test|bench|N] [--no-gpu] [--ip 127.0.0.x] | down | status | bench [--nodes bench|N]');
      return 2;
  }
}

main().then(
  (code) => process.exit(code),
  (e: Error) => {
    console.error(e.message);
    process.exit(1);
  },
);
