import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { freeTcpPort, productionSources, waitFor, waitForListen, waitUntil } from '.';

const repo = fileURLToPath(new URL('../../../../', import.meta.url));

describe('@ironlens/core/testing', () => {
  it('is imported by no production source', () => {
    const sources = productionSources(repo);
    expect(sources.length).toBeGreaterThan(20);
    const importers = sources.filter((p) => readFileSync(p, 'utf8').includes('@ironlens/core/testing'));
    expect(importers).toEqual([]);
  });

  it('waits until a condition holds, and names what it waited for on timeout', async () => {
    let n = 0;
    expect(await waitFor('n to reach 3', () => ++n, (v) => v >= 3, 1_000, 1)).toBe(3);
    await expect(waitUntil('never', () => false, 30, 5)).rejects.toThrow(/waiting for never; last seen: false/);
  });

  it('waits for a listener, stops at once when the process behind it failed, and names the port on timeout', async () => {
    const port = await freeTcpPort();
    await expect(waitForListen('nothing', '127.0.0.1', port, { timeoutMs: 100 })).rejects.toThrow(`nothing did not listen on 127.0.0.1:${port} within 100 ms`);
    const t0 = Date.now();
    await expect(waitForListen('a server', '127.0.0.1', port, { failed: () => 'exited (1)' })).rejects.toThrow('a server: exited (1)');
    expect(Date.now() - t0).toBeLessThan(1_000);
    const srv = createServer().listen(port, '127.0.0.1');
    try {
      await waitForListen('a server', '127.0.0.1', port, { timeoutMs: 5_000 });
    } finally {
      srv.close();
    }
  });
});
