import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { productionSources, waitFor, waitUntil } from '.';

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
});
