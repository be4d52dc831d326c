import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type MetalFixture, newMetalFixture } from '../testing/fixture';
import { createMetalServices } from '../wiring';

let f: MetalFixture;
const ctx = { client: 'test' };

beforeEach(async () => {
  f = await newMetalFixture();
});
afterEach(async () => {
  await f.close();
});

describe('ironlens import --replace', () => {
  it('replaces every table with the layout: nothing of the old ledger is left', async () => {
    await f.services.devices.register({ mac: '02:00:00:00:00:01' }, ctx);
    await f.services.workers.create({ worker_id: 'kept', mac: '02:00:00:00:00:01' }, ctx);
    await f.services.settings.setAutoRegister(false, ctx);
    const dir = join(f.dir, 'layout');
    await f.services.layout.export(dir);
    const exported = (await f.services.operations({})).entries.length;

    await f.services.devices.register({ mac: '02:00:00:00:00:02' }, ctx);
    await f.services.workers.create({ worker_id: 'dropped', mac: '02:00:00:00:00:02' }, ctx);
    await f.services.settings.setAutoRegister(true, ctx);
    await expect(f.services.layout.import(dir)).rejects.toMatchObject({ code: 'store_not_empty' });

    await f.services.layout.import(dir, { replace: true });
    // `ironlens import` runs in its own process: read the store as the next `serve` will.
    const next = createMetalServices({ store: f.store, config: f.config });
    expect((await next.workers.list()).map((w) => w.worker_id)).toEqual(['kept']);
    expect((await next.devices.list()).map((d) => d.mac)).toEqual(['02:00:00:00:00:01']);
    expect(await next.settings.getAutoRegister()).toBe(false);
    expect((await next.operations({})).entries).toHaveLength(exported);
  });
});
