/** What the figures were measured on: cores, CPU model, Node, kernel, wrk and nginx versions. */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism, release } from 'node:os';

export function machine(): Record<string, string> {
  const cpuinfo = readFileSync('/proc/cpuinfo', 'utf8');
  const model = /^model name\s*:\s*(.*)$/m.exec(cpuinfo)?.[1] ?? 'unknown';
  // wrk --version exits 1, nginx -v prints to stderr: take the first line of either stream.
  const tool = (cmd: string, args: string[]) => {
    const r = spawnSync(cmd, args, { encoding: 'utf8' });
    return `${r.stdout ?? ''}${r.stderr ?? ''}`.trim().split('\n')[0] || 'unknown';
  };
  return {
    nproc: String(availableParallelism()),
    cpu: model,
    node: process.version,
    kernel: release(),
    wrk: tool('wrk', ['--version']).replace(/ Copyright.*$/, ''),
    nginx: tool('nginx', ['-v']),
  };
}
