/**
 * The first boot of a storm: every machine asks once, so every request misses the
 * read-through cache. Sends each path once, `concurrency` at a time over keep-alive
 * connections, and times the whole pass; the same pass again shows the warm cache with
 * the same client, so the two figures compare.
 */
import { Agent, request } from 'node:http';

export interface PassResult {
  requests: number;
  seconds: number;
  rps: number;
  failures: number;
}

export async function pass(port: number, paths: string[], concurrency = 64): Promise<PassResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  let next = 0;
  let failures = 0;
  const one = (path: string) =>
    new Promise<void>((resolve) => {
      const req = request({ host: '127.0.0.1', port, path, agent }, (res) => {
        if (res.statusCode !== 200) failures++;
        res.resume();
        res.on('end', resolve);
      });
      req.on('error', () => {
        failures++;
        resolve();
      });
      req.end();
    });
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < paths.length) await one(paths[next++]);
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  agent.destroy();
  return { requests: paths.length, seconds, rps: paths.length / seconds, failures };
}
