/**
 * CPU time of a process and its direct children, from /proc (Linux). The benchmark
 * reports each server's requests per CPU-second, which holds still on a shared machine
 * where req/s moves with whatever else runs, and wrk's own CPU use, which tells when the
 * load generator (one thread) rather than the server is the limit.
 */
import { readFileSync } from 'node:fs';

const TICKS = 100; // USER_HZ on Linux

function ownTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(f[11]) + Number(f[12]); // utime, stime (fields 14 and 15)
  } catch {
    return 0;
  }
}

function children(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** Seconds of CPU used so far by `pid` and its direct children (nginx's worker). */
export function cpuSeconds(pid: number): number {
  return (ownTicks(pid) + children(pid).reduce((a, c) => a + ownTicks(c), 0)) / TICKS;
}
