import type pg from 'pg';
import { Periodic } from '../timing/periodic';
import { sleep } from '../timing/sleep';
import { pgDriver } from './pg-module';
import { replicaId } from './replica';
import type { Store } from './store';

/** The PostgreSQL channel every replica LISTENs on. */
export const CHANGES_CHANNEL = 'ironlens_changes';

/** What another replica changed: `topic` (`metal.ledger`…) and, when narrower than the topic, a key (a MAC…). */
export interface Change {
  topic: string;
  /** Null: anything under the topic may have changed. */
  key: string | null;
  /** The replica id of the sender. */
  origin: string;
}

export type ChangeHandler = (change: Change) => void;

/** Topic names: lower-case words joined by `.`, `_` or `-` (no `:` or space: they separate the payload's fields). */
const TOPIC = /^[a-z][a-z0-9._-]{0,62}$/;
/** Longer keys are sent as "the whole topic" (a NOTIFY payload is limited to 8000 bytes). */
const MAX_KEY = 512;

/**
 * Tells the other replicas sharing the database that something they may cache changed.
 * Writers call {@link publish} after their transaction committed (their own caches they
 * clear themselves, at once, as a single process always did); handlers given to
 * {@link subscribe} run for changes made by OTHER replicas only. Ignoring one's own
 * notifications is safe because the writer cleared its caches synchronously after the commit,
 * before it published.
 *
 * Notifications are not durable: after a lost connection, {@link onResync} handlers run once
 * the feed listens again, and must reload or clear everything the feed protects.
 */
export interface ChangeFeed {
  /** True when other processes may write the same database (PostgreSQL). */
  readonly shared: boolean;
  readonly origin: string;
  /** Sends `topic[:key]` to every other replica. Never throws: delivery is retried, then logged. */
  publish(topic: string, key?: string | null): void;
  /** Runs `fn` for every change of `topic` made by another replica. Returns the unsubscribe function. */
  subscribe(topic: string, fn: ChangeHandler): () => void;
  /** Runs `fn` after a lost connection was re-established (notifications sent meanwhile were lost). */
  onResync(fn: () => void): () => void;
  /** Resolves when every change published so far was handed to the database. */
  flush(): Promise<void>;
  close(): Promise<void>;
}

export interface ChangeFeedOptions {
  /** Who this process is (notifications from it are ignored). Default is {@link replicaId}. */
  origin?: string;
  /** First delay before reconnecting the LISTEN connection; doubled per failure. Default is `100` ms. */
  reconnectMinMs?: number;
  /** Longest delay between reconnection attempts. Default is `5000` ms. */
  reconnectMaxMs?: number;
  /** How often the LISTEN connection is checked with `select 1` (a silently dead TCP connection). Default is `10000` ms. */
  pingMs?: number;
  /** Where connection losses and failed publishes are reported. Default: nothing. */
  log?: (msg: string) => void;
}

class Subscribers {
  private readonly byTopic = new Map<string, Set<ChangeHandler>>();
  private readonly resync = new Set<() => void>();

  add(topic: string, fn: ChangeHandler): () => void {
    if (!TOPIC.test(topic)) throw new Error(`bad change topic ${JSON.stringify(topic)}`);
    let set = this.byTopic.get(topic);
    if (!set) {
      set = new Set();
      this.byTopic.set(topic, set);
    }
    set.add(fn);
    return () => set.delete(fn);
  }

  addResync(fn: () => void): () => void {
    this.resync.add(fn);
    return () => this.resync.delete(fn);
  }

  deliver(c: Change, log: (msg: string) => void): void {
    for (const fn of this.byTopic.get(c.topic) ?? []) {
      try {
        fn(c);
      } catch (err) {
        log(`change handler for ${c.topic} failed: ${(err as Error).message}`);
      }
    }
  }

  resyncAll(log: (msg: string) => void): void {
    for (const fn of this.resync) {
      try {
        fn();
      } catch (err) {
        log(`resync handler failed: ${(err as Error).message}`);
      }
    }
  }
}

/**
 * SQLite: one process owns the file, there is nobody to tell. Publishing does nothing and
 * no handler ever runs (a handler runs only for other replicas' changes).
 */
export class LocalChangeFeed implements ChangeFeed {
  readonly shared = false;
  private readonly subs = new Subscribers();
  constructor(readonly origin: string = replicaId()) {}
  publish(topic: string): void {
    if (!TOPIC.test(topic)) throw new Error(`bad change topic ${JSON.stringify(topic)}`);
  }
  subscribe(topic: string, fn: ChangeHandler): () => void {
    return this.subs.add(topic, fn);
  }
  onResync(fn: () => void): () => void {
    return this.subs.addResync(fn);
  }
  async flush(): Promise<void> {}
  async close(): Promise<void> {}
}

/** `origin topic[:key]` → a change; null for a payload that is not ours. */
export function parseChangePayload(payload: string): Change | null {
  const sp = payload.indexOf(' ');
  if (sp <= 0) return null;
  const origin = payload.slice(0, sp);
  const rest = payload.slice(sp + 1);
  const colon = rest.indexOf(':');
  const topic = colon < 0 ? rest : rest.slice(0, colon);
  if (!TOPIC.test(topic)) return null;
  return { origin, topic, key: colon < 0 ? null : rest.slice(colon + 1) };
}

/**
 * PostgreSQL: `pg_notify('ironlens_changes', '<origin> <topic>[:key]')` through the pool after
 * the writer's commit (the publishes of one tick go out in one statement), and a dedicated
 * connection (not from the pool) that `LISTEN`s. A lost LISTEN connection is re-opened with
 * a doubling backoff; once it listens again every {@link ChangeFeed.onResync} handler runs.
 */
export class PgChangeFeed implements ChangeFeed {
  readonly shared = true;
  readonly origin: string;
  private readonly subs = new Subscribers();
  private readonly opts: Required<Omit<ChangeFeedOptions, 'origin'>>;
  private client: pg.Client | null = null;
  private closed = false;
  private reconnectTimer?: NodeJS.Timeout;
  private pings?: Periodic<void>;
  private delay: number;
  private pending = new Set<string>();
  private scheduled = false;
  private inflight: Promise<void> = Promise.resolve();

  private constructor(
    private readonly pool: pg.Pool,
    opts: ChangeFeedOptions,
  ) {
    this.origin = opts.origin ?? replicaId();
    this.opts = {
      reconnectMinMs: opts.reconnectMinMs ?? 100,
      reconnectMaxMs: opts.reconnectMaxMs ?? 5000,
      pingMs: opts.pingMs ?? 10_000,
      log: opts.log ?? (() => {}),
    };
    this.delay = this.opts.reconnectMinMs;
  }

  /** Opens the LISTEN connection; rejects when the first connection fails. */
  static async open(pool: pg.Pool, opts: ChangeFeedOptions = {}): Promise<PgChangeFeed> {
    const feed = new PgChangeFeed(pool, opts);
    await feed.listen();
    // One ping at a time: a ping still waiting on a slow server is not stacked with more.
    feed.pings = new Periodic(() => feed.ping(), feed.opts.pingMs).start();
    return feed;
  }

  private async listen(): Promise<void> {
    const o = this.pool.options;
    const client = new (pgDriver().Client)({ connectionString: o.connectionString, keepAlive: true, query_timeout: 5000 });
    client.on('notification', (msg) => {
      if (msg.channel !== CHANGES_CHANNEL || !msg.payload) return;
      const c = parseChangePayload(msg.payload);
      if (c && c.origin !== this.origin) this.subs.deliver(c, this.opts.log);
    });
    client.on('error', (err) => this.lost(client, err.message));
    client.on('end', () => this.lost(client, 'connection ended'));
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANGES_CHANNEL}`);
    } catch (err) {
      client.removeAllListeners('end');
      client.on('error', () => {});
      await client.end().catch(() => {});
      throw err;
    }
    if (this.closed) {
      await client.end().catch(() => {});
      return;
    }
    this.client = client;
  }

  private lost(client: pg.Client, why: string): void {
    if (this.client !== client || this.closed) return;
    this.client = null;
    client.removeAllListeners('notification');
    client.on('error', () => {});
    client.end().catch(() => {});
    this.opts.log(`change feed: LISTEN connection lost (${why}); reconnecting`);
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.closed || this.reconnectTimer) return;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      this.listen().then(
        () => {
          if (this.closed) return;
          this.delay = this.opts.reconnectMinMs;
          this.opts.log('change feed: listening again; reloading every cache');
          this.subs.resyncAll(this.opts.log);
        },
        () => {
          this.delay = Math.min(this.delay * 2, this.opts.reconnectMaxMs);
          this.scheduleReconnect();
        },
      );
    }, this.delay);
    this.reconnectTimer.unref();
  }

  private async ping(): Promise<void> {
    const c = this.client;
    if (!c) return;
    await c.query('select 1').catch((err: Error) => this.lost(c, `ping failed: ${err.message}`));
  }

  publish(topic: string, key: string | null = null): void {
    if (!TOPIC.test(topic)) throw new Error(`bad change topic ${JSON.stringify(topic)}`);
    if (this.closed) return;
    const k = key !== null && key.length <= MAX_KEY && !key.includes(' ') ? `:${key}` : '';
    this.pending.add(`${this.origin} ${topic}${k}`);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      const batch = [...this.pending];
      this.pending.clear();
      this.inflight = this.inflight.then(() => this.send(batch));
    });
  }

  private async send(batch: string[]): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.pool.query('select pg_notify($1, p) from unnest($2::text[]) as p', [CHANGES_CHANNEL, batch]);
        return;
      } catch (err) {
        if (attempt >= 5 || this.pool.ending) {
          this.opts.log(`change feed: could not notify the other replicas (${(err as Error).message}); they see the change after their next resync`);
          return;
        }
        await sleep(100 * 2 ** attempt);
      }
    }
  }

  subscribe(topic: string, fn: ChangeHandler): () => void {
    return this.subs.add(topic, fn);
  }

  onResync(fn: () => void): () => void {
    return this.subs.addResync(fn);
  }

  async flush(): Promise<void> {
    if (this.scheduled) await new Promise((r) => setImmediate(r));
    await this.inflight;
  }

  /** True while the LISTEN connection is up. */
  get listening(): boolean {
    return this.client !== null;
  }

  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.pings?.stop();
    const c = this.client;
    this.client = null;
    if (c) {
      c.removeAllListeners('end');
      c.on('error', () => {});
      await c.end().catch(() => {});
    }
  }
}

/** The feed for `store`: {@link PgChangeFeed} on PostgreSQL, {@link LocalChangeFeed} on SQLite. */
export async function openChangeFeed(store: Pick<Store<unknown>, 'dialect' | 'pool'>, opts: ChangeFeedOptions = {}): Promise<ChangeFeed> {
  if (store.dialect === 'postgres' && store.pool) return PgChangeFeed.open(store.pool, opts);
  return new LocalChangeFeed(opts.origin);
}
