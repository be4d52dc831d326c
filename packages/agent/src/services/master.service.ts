import type { AgentMaster } from '../api/schemas';
import type { DiskImages } from '../adapters/disk-images.adapter';
import { isMasterName } from '../domain/names';

/** A master image as `GET /masters` lists it (the API's schema). */
export type Master = AgentMaster;

/** Default time between two rescans of DISK_DIR for masters: 30 s (seed 004 §15). */
export const MASTER_RESCAN_MS = 30_000;

/**
 * The master images of this node: files in DISK_DIR whose name contains `_tpl_`, kept in
 * a cache that a timer refreshes, and that is filled on first use.
 */
export class MasterCatalog {
  private cache: Master[] | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly images: DiskImages,
    private readonly onError: (err: unknown) => void = () => {},
  ) {}

  async refresh(): Promise<Master[]> {
    const masters = (await this.images.list())
      .filter((f) => isMasterName(f.name))
      .map((f) => ({ name: f.name, size: f.size, mtime: Math.floor(f.mtimeMs / 1000) }));
    this.cache = masters;
    return masters;
  }

  async list(): Promise<Master[]> {
    return this.cache ?? this.refresh();
  }

  /** Rescans every `intervalMs` until `stop()`. The timer does not keep the process alive. */
  start(intervalMs = MASTER_RESCAN_MS): void {
    this.stop();
    this.timer = setInterval(() => {
      this.refresh().catch(this.onError);
    }, intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
