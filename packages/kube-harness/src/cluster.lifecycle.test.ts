/**
 * Start/stop hygiene: processes are stopped by pid, the temp data dir is removed,
 * and a start that fails half-way leaves nothing running.
 */
import { describe, it, expect, beforeAll } from 'vitest';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { startKubeCluster } from './cluster.harness';
import { ensureKubeBinaries } from './binaries.builder';
import { processAlive as alive } from '@ironlens/core';

/** pids whose command line mentions `needle` (e.g. a data dir). */
function processesMentioning(needle: string): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (readFileSync(`/proc/${d}/cmdline`, 'utf8').includes(needle)) out.push(Number(d));
    } catch {
      /* exited meanwhile */
    }
  }
  return out;
}

// Build (or find cached) binaries first: a cold build takes longer than the root hookTimeout.
beforeAll(() => ensureKubeBinaries().then(() => undefined), 45 * 60_000);

describe('kube-harness lifecycle', { timeout: 120_000 }, () => {
  it('refuses a non-loopback IP before starting anything', async () => {
    await expect(startKubeCluster({ ip: '10.0.0.1', nodes: 0 })).rejects.toThrow(/loopback only/);
  });

  it('runs on another 127.0.0.x address and stops every process by pid, removing its data dir', async () => {
    const h = await startKubeCluster({ ip: '127.0.0.2', nodes: 0 });
    expect(h.server.startsWith('https://127.0.0.2:')).toBe(true);
    const pids = Object.values(h.pids);
    expect(pids).toHaveLength(5);
    expect(pids.every(alive)).toBe(true);
    expect(existsSync(h.dataDir)).toBe(true);
    await h.stop();
    expect(pids.filter(alive)).toEqual([]);
    expect(existsSync(h.dataDir)).toBe(false);
    expect(processesMentioning(h.dataDir)).toEqual([]);
  });

  it('cleans up after a start that fails once the control plane is up', async () => {
    const lines: string[] = [];
    // 5,000 nodes is over the fixture limit: loading fails after all processes started.
    await expect(startKubeCluster({ nodes: 5000, log: (l) => lines.push(l) })).rejects.toThrow(/at most 2,000/);
    const kubeconfigLine = lines.find((l) => l.includes('kubeconfig /'));
    expect(kubeconfigLine).toBeDefined();
    const dataDir = /kubeconfig (\S+)\/kubeconfig/.exec(kubeconfigLine!)![1];
    expect(processesMentioning(dataDir)).toEqual([]);
    expect(existsSync(dataDir)).toBe(false);
  });
});
