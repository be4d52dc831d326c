import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '@ironlens/core';

export interface LunIndexEntry {
  /** Backing file name in DISK_DIR. */
  filename: string;
  cd: boolean;
  /** The only initiator admitted to the target; absent: every initiator. */
  initiator?: string;
  /**
   * The CHAP user the target was bound to (never the secret: the agent keeps no secret on
   * disk). A scan rebuilds such a target only with that user's credential in its request.
   */
  chap_user?: string;
}

/** The index file, kept in DISK_DIR beside the images it describes. */
export const LUN_INDEX_FILE = '.ironlens-agent-luns.json';

/**
 * Which IQN each backing file was exported under, so a scan can rebuild a target under
 * its own IQN, and with its own access rule, even when the file name is not the default
 * one derived from it. One small JSON file
 * (`{"version":1,"luns":{"<iqn>":{"filename":"…","cd":false,"initiator":"iqn…"}}}`,
 * `initiator` only for a target restricted to one initiator, `chap_user` only for one bound
 * to a CHAP account), rewritten atomically.
 * Callers serialize writes (the LUN service's lock).
 */
export class LunIndex {
  readonly file: string;

  constructor(dir: string) {
    this.file = join(dir, LUN_INDEX_FILE);
  }

  async read(): Promise<Map<string, LunIndexEntry>> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return new Map();
      throw err;
    }
    const data = JSON.parse(text) as { luns?: Record<string, LunIndexEntry> };
    return new Map(Object.entries(data.luns ?? {}).filter(([, e]) => typeof e?.filename === 'string'));
  }

  async put(iqn: string, entry: LunIndexEntry): Promise<void> {
    const all = await this.read();
    all.set(iqn, {
      filename: entry.filename,
      cd: entry.cd,
      ...(entry.initiator === undefined ? {} : { initiator: entry.initiator }),
      ...(entry.chap_user === undefined ? {} : { chap_user: entry.chap_user }),
    });
    await this.write(all);
  }

  async remove(iqn: string): Promise<void> {
    const all = await this.read();
    if (all.delete(iqn)) await this.write(all);
  }

  async write(all: Map<string, LunIndexEntry>): Promise<void> {
    const luns = Object.fromEntries([...all.entries()].sort(([a], [b]) => a.localeCompare(b)));
    await writeFileAtomic(this.file, `${JSON.stringify({ version: 1, luns }, null, 2)}\n`);
  }
}
