/**
 * The pods' side of the deployments suite's pod network: runs inside the network namespace
 * `PodNetwork` made (started there with `ip netns exec`), reads one JSON command per line on
 * stdin and answers one JSON line on stdout. Commands: `serve` (give the namespace's loopback the
 * pod's IP, then run a vLLM stand-in for the container's command line on it — or answer how vLLM
 * would have exited), `sidecar` (the routing sidecar's stand-in), `stop` (every listener of an IP).
 */
import { execFileSync } from 'node:child_process';
import type { Server } from 'node:http';
import { createInterface } from 'node:readline';
import { parseServe, routingSidecar, VllmStandIn } from './vllm-standin';

type Command = { id: number; op: 'serve'; ip: string; args: string[] } | { id: number; op: 'sidecar'; ip: string; port: number; to: number } | { id: number; op: 'stop'; ip: string };

const IPV4 = /^10\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;
const listeners = new Map<string, Array<{ close(): Promise<void> | void }>>();
const addresses = new Set<string>();

function address(ip: string): void {
  if (!IPV4.test(ip)) throw new Error(`not a pod IP: ${ip}`);
  if (addresses.has(ip)) return;
  execFileSync('ip', ['addr', 'add', `${ip}/32`, 'dev', 'lo'], { stdio: 'pipe' });
  addresses.add(ip);
}

async function run(c: Command): Promise<Record<string, unknown>> {
  if (c.op === 'serve') {
    const parsed = parseServe(c.args);
    if (!parsed.ok) return { exit: 2, log: parsed.log };
    address(c.ip);
    const s = new VllmStandIn(c.ip, parsed.port, parsed.model, parsed.maxModelLen);
    await s.listen();
    listeners.set(c.ip, [...(listeners.get(c.ip) ?? []), s]);
    return { listening: `${c.ip}:${parsed.port}`, log: `INFO: Starting vLLM API server on http://${c.ip}:${parsed.port}\nINFO: Application startup complete.\n` };
  }
  if (c.op === 'sidecar') {
    address(c.ip);
    const srv: Server = await routingSidecar(c.ip, c.port, c.to);
    listeners.set(c.ip, [...(listeners.get(c.ip) ?? []), { close: () => new Promise<void>((r) => srv.close(() => r())) }]);
    return { listening: `${c.ip}:${c.port}` };
  }
  for (const l of listeners.get(c.ip) ?? []) await l.close();
  listeners.delete(c.ip);
  return { stopped: c.ip };
}

const rl = createInterface({ input: process.stdin });
rl.on('line', (line) => {
  let c: Command;
  try {
    c = JSON.parse(line) as Command;
  } catch {
    return;
  }
  run(c).then(
    (out) => process.stdout.write(`${JSON.stringify({ id: c.id, ...out })}\n`),
    (e) => process.stdout.write(`${JSON.stringify({ id: c.id, error: (e as Error).message })}\n`),
  );
});
rl.on('close', () => process.exit(0));
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
