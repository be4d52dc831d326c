import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Postgres, sleep, startPostgres, waitUntil } from '../testing';
import { AdvisoryLeader } from './advisory-leader';
import { type Change, LocalChangeFeed, openChangeFeed, type PgChangeFeed } from './change-feed';
import { Store } from './store';

// A PostgreSQL of this file's own (in both vitest projects): the reconnect tests restart it,
// which the suite's shared server must not see.
let pg: Postgres;
const closers: Array<() => Promise<void>> = [];

beforeAll(async () => {
  pg = await startPostgres();
});
afterAll(() => pg?.stop());
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c().catch(() => {});
});

async function replica(url: string, origin: string) {
  const store = await Store.open({ url, migrations: [] });
  closers.push(() => store.close());
  const feed = (await openChangeFeed(store, { origin, reconnectMinMs: 50, reconnectMaxMs: 400 })) as PgChangeFeed;
  closers.push(() => feed.close());
  return { store, feed };
}

function collect(feed: PgChangeFeed, topic: string) {
  const got: Array<Change & { at: number }> = [];
  feed.subscribe(topic, (c) => got.push({ ...c, at: Date.now() }));
  return got;
}

describe('change feed', () => {
  it('tells the other replica within 100 ms, with the key, and never the sender itself', async () => {
    const url = await pg.createDatabase();
    const a = await replica(url, 'replica-a');
    const b = await replica(url, 'replica-b');
    const onA = collect(a.feed, 'metal.device');
    const onB = collect(b.feed, 'metal.device');
    const sent = Date.now();
    a.feed.publish('metal.device', '02:00:00:00:00:01');
    await waitUntil('b hears it', () => onB.length === 1, 2000, 2);
    expect(onB[0].at - sent).toBeLessThan(100);
    expect(onB[0]).toMatchObject({ topic: 'metal.device', key: '02:00:00:00:00:01', origin: 'replica-a' });
    // Same tick: one statement carries both; a topic nobody on B subscribed to is not delivered there.
    a.feed.publish('metal.ledger');
    a.feed.publish('metal.device', 'x'.repeat(600));
    await a.feed.flush();
    await waitUntil('b hears the second', () => onB.length === 2, 2000, 2);
    expect(onB[1].key).toBeNull();
    // Never the sender itself: PostgreSQL delivers notices in commit order, so a replica that
    // heard its own would have heard it before a later notice of the other's.
    b.feed.publish('metal.device', 'from-b');
    await waitUntil("a hears b's notice", () => onA.some((c) => c.key === 'from-b'), 2000, 2);
    a.feed.publish('metal.device', 'from-a');
    await waitUntil("b hears a's next notice", () => onB.some((c) => c.key === 'from-a'), 2000, 2);
    expect(onA.map((c) => c.origin)).toEqual(['replica-b']);
    expect(onB.map((c) => c.origin)).toEqual(['replica-a', 'replica-a', 'replica-a']);
  });

  it('reconnects after PostgreSQL restarts, runs the resync handlers, and delivers again', async () => {
    const url = await pg.createDatabase();
    const a = await replica(url, 'replica-a');
    const b = await replica(url, 'replica-b');
    const onB = collect(b.feed, 'metal.ledger');
    let resyncs = 0;
    b.feed.onResync(() => resyncs++);
    pg.restart();
    await waitUntil('b resyncs', () => resyncs === 1, 15_000);
    expect(b.feed.listening).toBe(true);
    a.feed.publish('metal.ledger');
    await waitUntil('b hears after the restart', () => onB.length === 1, 5000);
    expect(onB[0].origin).toBe('replica-a');
  });

  it('on SQLite, is shared with nobody and refuses a malformed topic', () => {
    const feed = new LocalChangeFeed('solo');
    expect(feed.shared).toBe(false);
    expect(() => feed.publish('metal.ledger')).not.toThrow();
    expect(() => feed.publish('bad topic')).toThrow(/topic/);
  });
});

describe('advisory leader', () => {
  function leader(url: string, name: string, events: string[], who: string) {
    const l = new AdvisoryLeader(url, { name, retryMs: 100, onElected: () => events.push(`${who}+`), onLost: () => events.push(`${who}-`) });
    closers.push(() => l.close());
    return l;
  }

  it('elects one of two processes per name; the other takes over when the leader stops', async () => {
    const url = await pg.createDatabase();
    const events: string[] = [];
    const a = leader(url, 'dhcp:/srv/a', events, 'a');
    await a.start();
    const b = leader(url, 'dhcp:/srv/a', events, 'b');
    await b.start();
    const other = leader(url, 'dhcp:/srv/other', events, 'o');
    await other.start();
    expect([a.leader, b.leader, other.leader]).toEqual([true, false, true]);
    await sleep(300);
    expect(b.leader).toBe(false);
    await a.close();
    await waitUntil('b takes over', () => b.leader, 3000, 10);
    expect(events).toEqual(['a+', 'o+', 'a-', 'b+']);
  });

  it('loses leadership with its connection (PostgreSQL restart) and is elected again', async () => {
    const url = await pg.createDatabase();
    const events: string[] = [];
    const a = leader(url, 'dhcp:restart', events, 'a');
    await a.start();
    expect(a.leader).toBe(true);
    pg.restart();
    await waitUntil('a is leader again', () => events.length === 3, 15_000);
    expect(events).toEqual(['a+', 'a-', 'a+']);
  });
});
