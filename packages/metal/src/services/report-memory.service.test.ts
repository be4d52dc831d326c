/**
 * The report memory's words (issue 32, item 9): what a repeated /devices/report is known by, and
 * what bounds that memory. The route tests (report-limits.routes.test.ts) show the same through HTTP.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DeviceRepository } from '../repositories/device.repository';
import { type MetalFixture, newMetalFixture } from '../testing/fixture';
import { ReportMemory } from './report-memory.service';

let f: MetalFixture | undefined;
afterEach(async () => {
  await f?.close();
  f = undefined;
});

const MAC = '52:54:00:00:02:01';
const known = { fingerprint: { manufacturer: 'QEMU' }, uuid: null, last_seen: null };

async function memory(maxWordsChars?: number): Promise<ReportMemory> {
  f = await newMetalFixture({});
  return new ReportMemory(f.store, new DeviceRepository(), 60_000, () => {}, maxWordsChars);
}

describe('ReportMemory words', () => {
  it('recalls the words of an unchanged report by the MAC as spelled, and only those exact words', async () => {
    const m = await memory();
    const k = m.remember(MAC, known);
    m.note(MAC, `mac=${MAC}&manufacturer=QEMU`, MAC, k);
    expect(m.recall(MAC, `mac=${MAC}&manufacturer=QEMU`)).toEqual({ words: `mac=${MAC}&manufacturer=QEMU`, mac: MAC, k });
    expect(m.recall(MAC, `mac=${MAC}&manufacturer=QEMU&serial=1`)).toBeUndefined();
    expect(m.recall('525400000201', `mac=${MAC}&manufacturer=QEMU`)).toBeUndefined();
  });

  it('does not keep words longer than 2,048 characters', async () => {
    const m = await memory();
    const k = m.remember(MAC, known);
    const long = `mac=${MAC}&x=${'a'.repeat(2048)}`;
    m.note(MAC, long, MAC, k);
    expect(m.recall(MAC, long)).toBeUndefined();
  });

  it('starts again empty past its characters in all, so many spellings cannot grow it without bound', async () => {
    const m = await memory(120);
    const macs = ['52:54:00:00:02:01', '52:54:00:00:02:02', '52:54:00:00:02:03'];
    const words = (mac: string) => `mac=${mac}&manufacturer=QEMU&x=${'y'.repeat(10)}`; // 52 characters
    for (const mac of macs) m.note(mac, words(mac), mac, m.remember(mac, known));
    // The third text would pass 120 characters: the memory started again with it alone.
    expect(m.recall(macs[0], words(macs[0]))).toBeUndefined();
    expect(m.recall(macs[1], words(macs[1]))).toBeUndefined();
    expect(m.recall(macs[2], words(macs[2]))).toBeDefined();
    // A spelling's new text replaces its old one in the count: no clearing while the total holds.
    for (let i = 0; i < 5; i++) m.note(macs[2], words(macs[2]), macs[2], m.remember(macs[2], known));
    m.note(macs[0], words(macs[0]), macs[0], m.remember(macs[0], known));
    expect(m.recall(macs[2], words(macs[2]))).toBeDefined();
    expect(m.recall(macs[0], words(macs[0]))).toBeDefined();
  });
});
