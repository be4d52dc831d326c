import { createHash } from 'node:crypto';
import type pg from 'pg';
import { pgDriver } from './pg-module';

/** The first half of every ironlens advisory lock key ("IRLN"), so that other users of the database do not collide. */
export const ADVISORY_LOCK_CLASS = 0x49524c4e;

/** `[class, object]` for `pg_try_advisory_lock(int, int)`: the object is the first 4 bytes of the SHA-256 of `name`, as a signed int. */
export function advisoryLockKey(name: string): [number, number] {
  return [ADVISORY_LOCK_CLASS, createHash('sha256').update(name).digest().readInt32BE(0)];
}

export interface AdvisoryLeaderOptions {
  /** What the lock is for; replicas that give the same name elect one leader among them. */
  name: string;
  /** How often a follower tries to take the lock, and a leader checks its connection. Default is `2000` ms. */
  retryMs?: number;
  /** Runs when this process became the leader. */
  onElected?: () => void;
  /** Runs when this process stopped being the leader (lost connection, or `close`). */
  onLost?: () => void;
  log?: (msg: string) => void;
}

/**
 * One leader among the processes sharing a PostgreSQL database, by a session advisory lock
 * (`pg_try_advisory_lock`) held on a dedicated connection (not from the pool): the lock lives
 * as long as that session. Followers try again every `retryMs`; the leader checks its
 * connection as often, and a lost connection is lost leadership (the server frees the lock
 * when it notices the session ended, and another process takes it at its next try).
 */
export class AdvisoryLeader {
  private client: pg.Client | null = null;
  private isLeader = false;
  private timer?: NodeJS.Timeout;
  private closed = false;
  private readonly key: [number, number];
  private readonly retryMs: number;
  private running: Promise<void> = Promise.resolve();

  constructor(
    private readonly connectionString: string,
    private readonly opts: AdvisoryLeaderOptions,
  ) {
    this.key = advisoryLockKey(opts.name);
    this.retryMs = opts.retryMs ?? 2000;
  }

  get leader(): boolean {
    return this.isLeader;
  }

  /** Makes a first attempt (awaited) and keeps trying in the background. */
  async start(): Promise<void> {
    this.running = this.tick();
    await this.running;
  }

  private schedule(): void {
    if (this.closed) return;
    this.timer = setTimeout(() => {
      this.running = this.tick();
    }, this.retryMs);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    try {
      if (!this.client) await this.connect();
      const c = this.client;
      if (!c || this.closed) return;
      if (this.isLeader) {
        await c.query('select 1');
      } else {
        const r = await c.query<{ ok: boolean }>('select pg_try_advisory_lock($1, $2) as ok', this.key);
        if (r.rows[0]?.ok && !this.closed && this.client === c) {
          this.isLeader = true;
          this.opts.log?.(`elected leader of ${this.opts.name}`);
          this.opts.onElected?.();
        }
      }
    } catch (err) {
      if (this.client) void this.drop(this.client, (err as Error).message);
    } finally {
      this.schedule();
    }
  }

  private async connect(): Promise<void> {
    const client = new (pgDriver().Client)({ connectionString: this.connectionString, keepAlive: true, query_timeout: Math.max(5000, this.retryMs * 2) });
    client.on('error', (err) => void this.drop(client, err.message));
    client.on('end', () => void this.drop(client, 'connection ended'));
    try {
      await client.connect();
    } catch {
      client.removeAllListeners('end');
      client.on('error', () => {});
      await client.end().catch(() => {});
      return;
    }
    this.client = client;
  }

  private drop(client: pg.Client, why: string): Promise<void> {
    if (this.client !== client) return Promise.resolve();
    this.client = null;
    client.removeAllListeners('end');
    client.on('error', () => {});
    const ended = client.end().catch(() => {});
    if (this.isLeader) {
      this.isLeader = false;
      this.opts.log?.(`lost leadership of ${this.opts.name} (${why})`);
      this.opts.onLost?.();
    }
    return ended;
  }

  /** Stops trying; a leader releases the lock (its session ends). */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running.catch(() => {});
    const c = this.client;
    if (c) await this.drop(c, 'closed');
  }
}
