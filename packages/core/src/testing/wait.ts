import { connect, createServer } from 'node:net';

import { sleep } from '../timing/sleep';

/** Test helpers shared by every package: `@ironlens/core/testing`. Production code never imports them. */

export { sleep };

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

export interface WaitForListenOptions {
  /** Default is 30 s. */
  timeoutMs?: number;
  /** Polled before each attempt: why waiting is pointless (the process exited, with its output), or undefined to go on. Default: never. */
  failed?: () => string | undefined;
  /** Added to the timeout's error (the process' output). Default: nothing. */
  detail?: () => string;
}

/**
 * Resolves once something accepts TCP connections on `host:port`, polled every 50 ms; throws
 * what `failed()` says as soon as it says something, or an error naming `what` on timeout.
 */
export async function waitForListen(what: string, host: string, port: number, opts: WaitForListenOptions = {}): Promise<void> {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const failure = opts.failed?.();
    if (failure !== undefined) throw new Error(`${what}: ${failure}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, host);
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => {
        s.destroy();
        resolve(false);
      });
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`${what} did not listen on ${host}:${port} within ${timeoutMs} ms${opts.detail ? `: ${opts.detail()}` : ''}`);
    await sleep(50);
  }
}
