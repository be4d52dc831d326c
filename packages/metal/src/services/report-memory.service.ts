import { isoSeconds } from '@ironlens/core';
import type { Fingerprint } from '../domain/types';
import type { DeviceRepository } from '../repositories/device.repository';
import type { MetalStore } from '../repositories/tables';
import type { WarnFn } from './render-guard.service';

/** A known, not revoked device as this process last read or wrote it. */
export interface KnownDevice {
  fingerprint: Fingerprint;
  uuid: string | null;
  /** `last_seen` as the store holds it (or will, once the pending write is done), in ms. */
  lastSeenMs: number;
}

/** The most devices remembered; past it the memory starts again empty (each device then costs one read). */
const MAX_KNOWN = 200_000;

/** How long reported devices' last_seen wait to be written together (it is kept to the second, and moves once a minute by default). */
const FLUSH_DELAY_MS = 1000;

/** Devices read and written per statement by a flush (well under SQLite's and PostgreSQL's parameter limits). */
const FLUSH_CHUNK = 500;

/** The longest query string remembered as a report's words ({@link ReportMemory.recall}). */
const MAX_WORDS_LENGTH = 2048;
/** The most characters of words remembered in all (16–32 MiB); past it the words start again empty. */
const MAX_WORDS_CHARS = 16 * 1024 * 1024;

/**
 * `/devices/report` of a known device without the store (issue 32, item 9): the answer to a
 * known device is `#!ipxe` whatever the store holds, so a report that says nothing new
 * (the fingerprint and UUID this process last read or wrote for that MAC) is answered from
 * memory, and its `last_seen` (at most once per `IRONLENS_REPORT_LAST_SEEN_SECONDS`) is written
 * after the answer, batched: one transaction a second at most, one read and one write per 500
 * devices in it. The first report of a MAC in this process reads the store once; a repeated
 * report with the same query string is known by it ({@link ReportMemory.recall}).
 *
 * The memory is a hint, checked by every batched write: a device that is gone, revoked, or
 * whose fingerprint or UUID another replica (or an import) changed since is forgotten there, so
 * its next report takes the full path again. Reads of devices wait for the writes asked for so
 * far ({@link settled}): this process reads what it answered.
 */
export class ReportMemory {
  private readonly known = new Map<string, KnownDevice>();
  /** A MAC as a report spelled it → that report's query string, exactly as sent, and the device it was an unchanged report of. */
  private readonly bySpelling = new Map<string, { words: string; mac: string; k: KnownDevice }>();
  /** The length of every remembered query string, in all. */
  private wordsChars = 0;
  private readonly due = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: MetalStore,
    private readonly devices: DeviceRepository,
    private readonly intervalMs: number,
    private readonly warn: WarnFn = (m) => process.stderr.write(`${m}\n`),
    /** The most characters of words remembered in all. Default is {@link MAX_WORDS_CHARS}; tests give less. */
    private readonly maxWordsChars = MAX_WORDS_CHARS,
  ) {}

  get(mac: string): KnownDevice | undefined {
    return this.known.get(mac);
  }

  remember(mac: string, d: { fingerprint: Fingerprint; uuid: string | null; last_seen: string | null }): KnownDevice {
    if (this.known.size >= MAX_KNOWN && !this.known.has(mac)) this.known.clear();
    const k: KnownDevice = { fingerprint: d.fingerprint, uuid: d.uuid, lastSeenMs: d.last_seen ? Date.parse(d.last_seen) : Number.NEGATIVE_INFINITY };
    this.known.set(mac, k);
    return k;
  }

  forget(mac: string): void {
    this.known.delete(mac);
  }

  /**
   * The device whose last unchanged report, with its MAC spelled `spelled`, had exactly these words
   * (the query string as sent), while that memory still holds: iPXE sends the same text every
   * boot, so a repeated report is known without parsing or checking its fields again. The lookup
   * is by the short MAC; the long text is only compared. Forgetting or replacing the device's
   * memory (revoked, deleted, a new fingerprint, another replica's change) ends it.
   */
  recall(spelled: string, words: string): { mac: string; k: KnownDevice } | undefined {
    const hit = this.bySpelling.get(spelled);
    return hit && hit.words === words && this.known.get(hit.mac) === hit.k ? hit : undefined;
  }

  /**
   * `words`, with the MAC spelled `spelled`, was an unchanged report of `mac` as `k` holds it. One
   * text per spelling (the latest), and at most `maxWordsChars` in all: a device reported
   * under ever new words (an unknown parameter added each time) replaces its own entry.
   */
  note(spelled: string | undefined, words: string | undefined, mac: string, k: KnownDevice): void {
    if (spelled === undefined || words === undefined || words.length > MAX_WORDS_LENGTH) return;
    const before = this.bySpelling.get(spelled);
    if (before) this.wordsChars -= before.words.length;
    if (this.wordsChars + words.length > this.maxWordsChars) {
      this.bySpelling.clear();
      this.wordsChars = 0;
    }
    this.bySpelling.set(spelled, { words, mac, k });
    this.wordsChars += words.length;
  }

  /** True when a report with `fp` and `uuid` says something `k` does not hold. */
  static says(k: Pick<KnownDevice, 'fingerprint' | 'uuid'>, fp: Fingerprint, uuid: string | null): boolean {
    if (uuid && uuid !== k.uuid) return true;
    const held = k.fingerprint as Record<string, unknown>;
    for (const [f, v] of Object.entries(fp)) if (held[f] !== v) return true;
    return false;
  }

  /** `mac` reported at `atMs`: its `last_seen` is written within a second when the stored one is old enough. */
  seen(mac: string, k: KnownDevice, atMs: number): void {
    if (atMs >= k.lastSeenMs && atMs - k.lastSeenMs < this.intervalMs) return;
    k.lastSeenMs = atMs;
    this.due.set(mac, atMs);
    // One flush per FLUSH_DELAY_MS, not per turn: in a storm a turn holds a few dozen reports,
    // and a transaction each was most of the process' time once the interval came round.
    this.timer ??= setTimeout(() => this.startFlush(), FLUSH_DELAY_MS);
  }

  private startFlush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.flushing = this.flushing.then(() => this.flush());
  }

  /** Resolves when every `last_seen` write asked for so far is done. */
  async settled(): Promise<void> {
    // What is waiting for its flush is written now: a reader sees what was answered.
    if (this.timer) this.startFlush();
    await this.flushing;
  }

  private async flush(): Promise<void> {
    if (this.due.size === 0) return;
    const batch = [...this.due];
    this.due.clear();
    try {
      // A boot storm brings thousands at once: one read and one write per chunk and second, not per device.
      await this.store.transaction(async (trx) => {
        for (let i = 0; i < batch.length; i += FLUSH_CHUNK) {
          const chunk = batch.slice(i, i + FLUSH_CHUNK);
          const stored = new Map((await this.devices.getMany(trx, chunk.map(([mac]) => mac))).map((d) => [d.mac, d]));
          const bySecond = new Map<string, string[]>();
          for (const [mac, atMs] of chunk) {
            const d = stored.get(mac);
            const k = this.known.get(mac);
            if (!d || d.state === 'revoked' || !k || ReportMemory.says(d, k.fingerprint, k.uuid) || ReportMemory.says(k, d.fingerprint, d.uuid)) {
              this.known.delete(mac);
              if (!d || d.state === 'revoked') continue;
            }
            const second = isoSeconds(new Date(atMs));
            const macs = bySecond.get(second);
            if (macs) macs.push(mac);
            else bySecond.set(second, [mac]);
          }
          for (const [second, macs] of bySecond) await this.devices.touch(trx, macs, second);
        }
      });
    } catch (e) {
      for (const [mac] of batch) this.known.delete(mac);
      this.warn(`ironlens: writing last_seen of ${batch.length} reported device(s) failed: ${(e as Error).message}`);
    }
  }
}
