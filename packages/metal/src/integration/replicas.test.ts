/**
 * Several replicas on one PostgreSQL database: a write through one is seen by the other's
 * /boot-vars within 100 ms, and the hosts file has one writer per group that follows every
 * replica's commits and is taken over when the writer stops; with boot services on, only that
 * writer runs ironlens' own dnsmasq.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openChangeFeed, operationsMigrations, Store } from '@ironlens/core';
import { freshDatabaseUrl, onPostgres, type Postgres, sleep, startPostgres, waitFor, waitUntil } from '@ironlens/core/testing';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildMetalApp } from '../app';
import { BootServices } from '../boot-services/boot-services';
import { metalConfigFromEnv } from '../config';
import { metalMigrations } from '../repositories/metal.migrations';
import type { MetalDatabase } from '../repositories/tables';
import { MetalReplication } from '../services/replication.service';
import { ipAddrExec, standInArgs, writeDnsmasqStandIn, writeIpxeDir } from '../testing/dnsmasq-stand-in';
import { CountingReloader } from '../testing/fixture';
import { createMetalServices } from '../wiring';

// The suite's PostgreSQL in its postgres run; a server of this file's own in the SQLite run
// (replicas exist only on PostgreSQL).
let own: Postgres | undefined;
let url: string;
let dir: string;
const closers: Array<() => Promise<void>> = [];

beforeAll(async () => {
  if (!onPostgres()) own = await startPostgres();
});
afterAll(() => own?.stop());
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ironlens-replicas-'));
  url = own ? await own.createDatabase() : await freshDatabaseUrl();
});
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c().catch(() => {});
  rmSync(dir, { recursive: true, force: true });
});

const TOKEN = 't0ken';

/** `bootLog`: run the boot services (IRONLENS_BOOT_SERVICES=dhcp) with a stand-in dnsmasq, logging here. */
async function replica(name: string, dbUrl = url, resyncMs?: number, bootLog?: string[]) {
  const store = await Store.open<MetalDatabase>({ url: dbUrl, migrations: [...operationsMigrations, ...metalMigrations] });
  const changes = await openChangeFeed(store, { origin: name, reconnectMinMs: 50, reconnectMaxMs: 400 });
  const hostsFile = join(dir, name, 'dhcp-hosts.conf');
  const env = {
    IPXE_CP_TOKEN: TOKEN,
    IPXE_CP_DNSMASQ_HOSTS_FILE: hostsFile,
    IRONLENS_DHCP_WRITER_GROUP: 'one-dnsmasq',
    ...(bootLog
      ? { IRONLENS_BOOT_SERVICES: 'dhcp', IRONLENS_BOOT_INTERFACE: 'br0', IRONLENS_BOOT_DHCP_RANGE: '10.9.0.100,10.9.0.200', IRONLENS_BOOT_IPXE_DIR: writeIpxeDir(join(dir, 'ipxe')), IRONLENS_BOOT_DNSMASQ: writeDnsmasqStandIn(join(dir, 'bin')) }
      : {}),
  };
  const config = metalConfigFromEnv(env, join(dir, name));
  const boot = bootLog ? BootServices.fromEnv(env, hostsFile, (l) => bootLog.push(l)) : null;
  await boot?.checkHost(ipAddrExec('br0'));
  const reloader = new CountingReloader();
  const services = createMetalServices({ store, config, reloader: boot?.reloader ?? reloader, changes, bootServices: boot ?? undefined });
  const replication = await MetalReplication.start(services, changes, { connectionString: dbUrl, dhcpWriterGroup: config.dhcpWriterGroup, retryMs: 100, resyncMs });
  const app = await buildMetalApp({ services });
  boot?.attach({ dhcp: services.dhcp, bootScript: services.bootScript, port: 4839 });
  let open = true;
  const close = async () => {
    if (!open) return;
    open = false;
    await app.close();
    await boot?.stop();
    await replication.close();
    await changes.close();
    await store.close();
  };
  closers.push(close);
  const inject = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, body?: unknown) =>
    app.inject({ method, url: path, headers: { authorization: `Bearer ${TOKEN}` }, ...(body === undefined ? {} : { payload: body as object }) });
  const hosts = () => (existsSync(hostsFile) ? readFileSync(hostsFile, 'utf8') : null);
  const bootVars = async (q: string) => (await app.inject({ url: `/boot-vars?${q}` })).body;
  /** The notices of `topic` this replica has heard from the others (after its own handlers ran: they subscribed first). */
  const heard = (topic: string) => {
    const got: string[] = [];
    changes.subscribe(topic, (c) => got.push(c.origin));
    return got;
  };
  /** Counts the writer's backstop rounds that found the file equal to the store and nothing to finish (so no write or reload in flight). */
  const quietRounds = () => {
    const dhcp = services.dhcp;
    const check = dhcp.renderIfStale.bind(dhcp);
    const count = { n: 0 };
    dhcp.renderIfStale = async () => {
      const rendered = await check();
      if (!rendered) count.n++;
      return rendered;
    };
    return count;
  };
  return { services, replication, reloader, boot, hostsFile, inject, hosts, bootVars, heard, quietRounds, close };
}

describe('replicas on one database', () => {
  it("answers /boot-vars on replica B with a binding made through replica A within 100 ms, though B had cached the old answer", async () => {
    const a = await replica('a');
    const b = await replica('b');
    const devicesOnB = b.heard('metal.device');
    expect((await a.inject('GET', '/devices/report?mac=020000000001')).statusCode).toBe(200);
    // The report's own notice reaches B first: what B caches next must be cleared by the bind's.
    await waitUntil("B hears the report's notice", () => devicesOnB.length > 0, 2000, 2);
    expect(await b.bootVars('mac=020000000001')).toBe('#!ipxe\n# boot vars for 02:00:00:00:00:01\n# 02:00:00:00:00:01 is in the device pool, bound to no worker yet: it reboots until it is bound\nset menu-default reboot\nset menu-timeout 1\n');
    expect(await b.bootVars('hostname=w-01')).toBe('#!ipxe\n# no per-worker boot vars found\n');

    expect((await a.inject('POST', '/workers', { worker_id: 'w-01', mac: '020000000001' })).statusCode).toBe(200);
    const committed = Date.now();
    const bound = '#!ipxe\n# boot vars for w-01\n# w-01 has no system disk yet\nset menu-default reboot\nset menu-timeout 1\n';
    await waitUntil('B answers the binding', async () => (await b.bootVars('mac=020000000001')) === bound, 2000, 2);
    expect(Date.now() - committed).toBeLessThan(100);
    expect(await b.bootVars('hostname=w-01')).toBe(bound);

    // A setting, and an unbind through B, travel the other way.
    expect((await b.inject('PUT', '/settings/auto-register', { enabled: false })).statusCode).toBe(200);
    await waitUntil('A sees the setting', async () => (await a.inject('GET', '/settings/auto-register')).json().enabled === false, 2000, 5);
    expect((await b.inject('DELETE', '/workers/w-01')).statusCode).toBeLessThan(300);
    await waitUntil('A forgets the worker', async () => (await a.bootVars('hostname=w-01')) === '#!ipxe\n# no per-worker boot vars found\n', 2000, 5);
  });

  it('lets only the elected replica write the hosts file, which follows binds through the other, and hands it over when the writer stops', async () => {
    const a = await replica('a');
    const b = await replica('b');
    expect([a.replication.dhcpWriter, b.replication.dhcpWriter]).toEqual([true, false]);
    expect(a.hosts()).toBe('');
    for (const m of ['020000000001', '020000000002']) expect((await b.inject('GET', `/devices/report?mac=${m}`)).statusCode).toBe(200);

    // The election's renders reloaded dnsmasq already (once or twice): the bind's reload is the one after.
    const reloads = a.reloader.count;
    expect(reloads).toBeGreaterThanOrEqual(1);
    expect((await b.inject('POST', '/workers', { worker_id: 'w-01', mac: '020000000001' })).statusCode).toBe(200);
    const committed = Date.now();
    // The file is written, then dnsmasq reloaded: wait for both (the file alone is seen a moment before the reload).
    await waitUntil("the writer's file has B's bind and dnsmasq was reloaded", () => a.hosts() === '02:00:00:00:00:01,w-01,infinite\n' && a.reloader.count > reloads, 2000, 5);
    expect(Date.now() - committed).toBeLessThan(500);
    expect(b.hosts()).toBeNull();
    expect(b.reloader.count).toBe(0);

    await a.close();
    await waitUntil('B becomes the writer', () => b.replication.dhcpWriter, 3000, 10);
    // The file is written, then dnsmasq reloaded: wait for both.
    await waitUntil("B's file equals the database and dnsmasq was reloaded", () => b.hosts() === '02:00:00:00:00:01,w-01,infinite\n' && b.reloader.count > 0, 2000, 10);
    expect(b.reloader.count).toBe(1);
    expect((await b.inject('POST', '/workers', { worker_id: 'w-02', mac: '020000000002' })).statusCode).toBe(200);
    expect(b.hosts()).toBe('02:00:00:00:00:01,w-01,infinite\n02:00:00:00:00:02,w-02,infinite\n');
    expect(a.hosts()).toBe('02:00:00:00:00:01,w-01,infinite\n');
  });

  it("runs ironlens' own dnsmasq (IRONLENS_BOOT_SERVICES) on the elected writer only, reloads it for binds through the other, and starts the next writer's when the writer stops", async () => {
    const [logA, logB] = [[] as string[], [] as string[]];
    const a = await replica('a', url, undefined, logA);
    const b = await replica('b', url, undefined, logB);
    expect([a.replication.dhcpWriter, b.replication.dhcpWriter]).toEqual([true, false]);
    const onA = await waitFor("A's dnsmasq running", () => a.boot!.status(), (s) => s.state === 'running', 5000, 10);
    expect(b.boot!.status()).toMatchObject({ state: 'standby', pid: null });
    expect((await b.inject('GET', '/healthz')).json().boot_services).toMatchObject({ mode: 'dhcp', state: 'standby', pid: null });
    expect(standInArgs(b.hostsFile), 'B never started a dnsmasq').toEqual([]);
    expect(standInArgs(a.hostsFile)).toContain(`--dhcp-hostsfile=${a.hostsFile}`);

    // A bind through B: A writes its file and its own dnsmasq reads it again (SIGHUP).
    const reads = (log: string[], file: string) => log.filter((l) => l.endsWith(`read ${file}`)).length;
    const before = reads(logA, a.hostsFile);
    expect((await b.inject('GET', '/devices/report?mac=020000000001')).statusCode).toBe(200);
    expect((await b.inject('POST', '/workers', { worker_id: 'w-01', mac: '020000000001' })).statusCode).toBe(200);
    await waitUntil("A's dnsmasq read the file with B's bind", () => a.hosts() === '02:00:00:00:00:01,w-01,infinite\n' && reads(logA, a.hostsFile) > before, 3000, 10);
    expect(reads(logB, b.hostsFile)).toBe(0);

    await a.close();
    expect(() => process.kill(onA.pid!, 0), "A's dnsmasq ended with A").toThrow();
    const onB = await waitFor("B's dnsmasq running once B is the writer", () => b.boot!.status(), (s) => s.state === 'running', 5000, 10);
    expect(b.replication.dhcpWriter).toBe(true);
    expect(onB.pid).not.toBe(onA.pid);
    expect(standInArgs(b.hostsFile)).toContain(`--dhcp-hostsfile=${b.hostsFile}`);
    await waitUntil("B's file has the binding", () => b.hosts() === '02:00:00:00:00:01,w-01,infinite\n', 3000, 10);
  });

  it('catches up with a change whose notice never came (its sender died after the commit) within IRONLENS_REPLICA_RESYNC_MS', async () => {
    const a = await replica('a', url, 400);
    const b = await replica('b', url, 400);
    const quiet = a.quietRounds();
    const devicesOnB = b.heard('metal.device');
    expect((await a.inject('GET', '/devices/report?mac=020000000001')).statusCode).toBe(200);
    // The report's own notice reaches B first, so that only the backstop can clear what B caches next.
    await waitUntil("B hears the report's notice", () => devicesOnB.length > 0, 2000, 2);
    const pooled = '#!ipxe\n# boot vars for 02:00:00:00:00:01\n# 02:00:00:00:00:01 is in the device pool, bound to no worker yet: it reboots until it is bound\nset menu-default reboot\nset menu-timeout 1\n';
    expect(await b.bootVars('mac=020000000001')).toBe(pooled);

    // A process that tells nobody binds the device: no notice, only the backstop can help.
    const store = await Store.open<MetalDatabase>({ url, migrations: [...operationsMigrations, ...metalMigrations] });
    closers.push(() => store.close());
    const silent = createMetalServices({ store, config: metalConfigFromEnv({ IPXE_CP_TOKEN: TOKEN, IPXE_CP_DNSMASQ_HOSTS_FILE: join(dir, 'silent', 'dhcp-hosts.conf') }, join(dir, 'silent')), reloader: new CountingReloader() });
    const app = await buildMetalApp({ services: silent });
    closers.push(() => app.close());
    expect((await app.inject({ method: 'POST', url: '/workers', headers: { authorization: `Bearer ${TOKEN}` }, payload: { worker_id: 'w-01', mac: '020000000001' } })).statusCode).toBe(200);
    const committed = Date.now();
    const bound = '#!ipxe\n# boot vars for w-01\n# w-01 has no system disk yet\nset menu-default reboot\nset menu-timeout 1\n';
    await waitUntil('B answers the binding', async () => (await b.bootVars('mac=020000000001')) === bound, 3000, 20);
    await waitUntil("the writer's file has the binding", () => a.hosts() === '02:00:00:00:00:01,w-01,infinite\n', 3000, 20);
    expect(Date.now() - committed).toBeLessThan(1500);
    // An unchanged file is not rewritten: the writer's reloads stop once it holds the store. The
    // file is seen a moment before its reload; a backstop round that finds the file up to date
    // comes after that reload, and the two rounds after it write and reload nothing.
    const before = quiet.n;
    await waitUntil('a backstop round finds the file up to date', () => quiet.n > before, 3000, 20);
    const reloads = a.reloader.count;
    await waitUntil('two more backstop rounds', () => quiet.n > before + 2, 3000, 20);
    expect(a.reloader.count).toBe(reloads);
  });

  it('clears its caches and renders the file again after a PostgreSQL restart, when notices may have been lost', async () => {
    // A server of this test's own: it is restarted.
    const pg = await startPostgres();
    closers.unshift(async () => pg.stop());
    const dbUrl = await pg.createDatabase();
    const a = await replica('a', dbUrl);
    const b = await replica('b', dbUrl);
    const devicesOnB = b.heard('metal.device');
    expect((await a.inject('GET', '/devices/report?mac=020000000001')).statusCode).toBe(200);
    // The report's own notice reaches B first: a later one would clear the answer B caches next.
    await waitUntil("B hears the report's notice", () => devicesOnB.length > 0, 2000, 2);
    const pooled = '#!ipxe\n# boot vars for 02:00:00:00:00:01\n# 02:00:00:00:00:01 is in the device pool, bound to no worker yet: it reboots until it is bound\nset menu-default reboot\nset menu-timeout 1\n';
    expect(await b.bootVars('mac=020000000001')).toBe(pooled);

    // A process that tells nobody (a change whose notice was lost) binds the device.
    const store = await Store.open<MetalDatabase>({ url: dbUrl, migrations: [...operationsMigrations, ...metalMigrations] });
    closers.push(() => store.close());
    const silent = createMetalServices({ store, config: metalConfigFromEnv({ IPXE_CP_TOKEN: TOKEN, IPXE_CP_DNSMASQ_HOSTS_FILE: join(dir, 'silent', 'dhcp-hosts.conf') }, join(dir, 'silent')), reloader: new CountingReloader() });
    const app = await buildMetalApp({ services: silent });
    closers.push(() => app.close());
    expect((await app.inject({ method: 'POST', url: '/workers', headers: { authorization: `Bearer ${TOKEN}` }, payload: { worker_id: 'w-01', mac: '020000000001' } })).statusCode).toBe(200);
    await sleep(300);
    expect(await b.bootVars('mac=020000000001')).toBe(pooled);
    expect(a.hosts()).toBe('');

    pg.restart();
    const bound = '#!ipxe\n# boot vars for w-01\n# w-01 has no system disk yet\nset menu-default reboot\nset menu-timeout 1\n';
    await waitUntil('B reloads after the restart', async () => (await b.bootVars('mac=020000000001').catch(() => '')) === bound, 15_000, 50);
    // Both lost the lock with their connections; whichever took it again writes its file.
    await waitUntil("the writer's file equals the database again", () => [a, b].filter((r) => r.replication.dhcpWriter && r.hosts() === '02:00:00:00:00:01,w-01,infinite\n').length === 1, 15_000, 50);
    expect([a, b].filter((r) => r.replication.dhcpWriter)).toHaveLength(1);
  });
});
