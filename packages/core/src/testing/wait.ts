import { createServer } from 'node:net';

/** Test helpers shared by every package: `@ironlens/core/testing`. Production code never imports them. */

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Polls `read()` until `test` holds for its value, which it returns; on timeout throws an
 * error naming `what` and the last value seen. Default timeout is 10 s, polled every 50 ms.
 */
export async function waitFor<T>(what: string, read: () => T | Promise<T>, test: (v: T) => boolean, timeoutMs = 10_000, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T = await read();
  while (!test(last)) {
    if (Date.now() > deadline) {
      const shown = typeof last === 'string' ? last.slice(-1500) : JSON.stringify(last)?.slice(0, 1500);
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last seen: ${shown}`);
    }
    await sleep(everyMs);
    last = await read();
  }
  return last;
}

/** Polls `check()` until it is true. Default timeout is 10 s, polled every 50 ms. */
export async function waitUntil(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 10_000, everyMs = 50): Promise<void> {
  await waitFor(what, check, (ok) => ok, timeoutMs, everyMs);
}

/** A TCP port that was free on `host` a moment ago. Default host is `127.0.0.1`. */
export function freeTcpPort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, host, () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}
