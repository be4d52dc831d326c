/**
 * Two `ironlens serve` on one PostgreSQL database, as an operator runs them behind a load
 * balancer: each says it runs as a replica; a bind through one is answered by the other's
 * /boot-vars within 100 ms; one of them writes the group's hosts file and the other takes over
 * when it stops.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freshDatabaseUrl, onPostgres, type Postgres, startPostgres, waitUntil } from '@ironlens/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { transferLayout } from './layout';
import { type Running, serve } from './serve';

// The suite's PostgreSQL in its postgres run; a server of this file's own in the SQLite run.
let own: Postgres | undefined;
let url: string;
const dir = mkdtempSync(join(tmpdir(), 'ironlens-serve-replicas-'));
const TOKEN = 't0ken';
const replicas: Record<string, { running: Running; logs: string[]; hostsFile: string }> = {};

async function start(name: string, url: string) {
  const logs: string[] = [];
  const hostsFile = join(dir, name, 'dnsmasq', 'dhcp-hosts.conf');
  const running = await serve(
    {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      IRONLENS_DATABASE_URL: url,
      IRONLENS_DATA_DIR: join(dir, name),
      IRONLENS_REPLICA_ID: `replica-${name}`,
      IRONLENS_BOOT_LISTEN: '127.0.0.1:0',
      IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0',
      IRONLENS_SECRET_KEY: 'ab'.repeat(32),
      IPXE_CP_TOKEN: TOKEN,
      IPXE_CP_DNSMASQ_RELOAD: 'false',
      IRONLENS_DHCP_WRITER_GROUP: 'one-dnsmasq',
      IRONLENS_DHCP_WRITER_RETRY_MS: '100',
    },
    (m) => logs.push(m),
  );
  replicas[name] = { running, logs, hostsFile };
  return replicas[name];
}

const hosts = (name: string) => (existsSync(replicas[name].hostsFile) ? readFileSync(replicas[name].hostsFile, 'utf8') : null);
const call = (name: string, method: string, path: string, body?: unknown) =>
  fetch(`${replicas[name].running.urls.boot}${path}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });

beforeAll(async () => {
  if (onPostgres()) url = await freshDatabaseUrl();
  else {
    own = await startPostgres();
    url = await own.createDatabase();
  }
  await start('a', url);
  await start('b', url);
}, 120_000);

afterAll(async () => {
  for (const r of Object.values(replicas)) await r.running.close().catch(() => {});
  own?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('ironlens serve as replicas on PostgreSQL', () => {
  it('says so at start, and which replica writes the hosts file', () => {
    expect(replicas.a.logs.join('\n')).toMatch(/running as replica replica-a on PostgreSQL/);
    expect(replicas.a.logs.join('\n')).toMatch(/this replica writes .*a\/dnsmasq\/dhcp-hosts\.conf/);
    expect(replicas.b.logs.join('\n')).toMatch(/running as replica replica-b on PostgreSQL/);
    expect(replicas.b.logs.join('\n')).toMatch(/another replica of the group writes the hosts file/);
  });

  it('follows an `ironlens import` into the shared database, which writes no hosts file of its own', async () => {
    const empty = '#!ipxe\n# no per-worker boot vars found\n';
    expect(await (await call('a', 'GET', '/boot-vars?hostname=w-09')).text()).toBe(empty);
    const layout = join(dir, 'layout');
    mkdirSync(join(layout, 'state'), { recursive: true });
    writeFileSync(join(layout, 'state', 'workers.yml'), 'workers:\n  w-09: {}\n');
    const importHosts = join(dir, 'import', 'dhcp-hosts.conf');
    await transferLayout({ IRONLENS_DATABASE_URL: url, IRONLENS_DATA_DIR: join(dir, 'import'), IPXE_CP_DNSMASQ_HOSTS_FILE: importHosts, IPXE_CP_DNSMASQ_RELOAD: 'false', IRONLENS_SECRET_KEY: 'ab'.repeat(32) }, 'import', layout);
    await waitUntil('A answers the imported worker', async () => (await (await call('a', 'GET', '/boot-vars?hostname=w-09')).text()) !== empty, 2000, 5);
    expect(await (await call('b', 'GET', '/boot-vars?hostname=w-09')).text()).toBe('#!ipxe\n# boot vars for w-09\n# w-09 has no system disk yet\nset menu-default reboot\nset menu-timeout 1\n');
    expect(existsSync(importHosts)).toBe(false);
  });

  it('answers on A a bind made through B within 100 ms; A writes the file, B takes over when A stops', async () => {
    expect((await call('a', 'GET', '/devices/report?mac=020000000001')).status).toBe(200);
    expect(await (await call('a', 'GET', '/boot-vars?mac=020000000001')).text()).toBe('#!ipxe\n# boot vars for 02:00:00:00:00:01\n# 02:00:00:00:00:01 is in the device pool, bound to no worker yet: it reboots until it is bound\nset menu-default reboot\nset menu-timeout 1\n');
    expect((await call('b', 'POST', '/workers', { worker_id: 'w-01', mac: '020000000001' })).status).toBe(200);
    const committed = Date.now();
    const bound = '#!ipxe\n# boot vars for w-01\n# w-01 has no system disk yet\nset menu-default reboot\nset menu-timeout 1\n';
    await waitUntil('A answers the binding', async () => (await (await call('a', 'GET', '/boot-vars?mac=020000000001')).text()) === bound, 2000, 2);
    expect(Date.now() - committed).toBeLessThan(100);
    await waitUntil("A's file has the binding", () => hosts('a') === '02:00:00:00:00:01,w-01,infinite\n', 2000, 5);
    expect(hosts('b')).toBeNull();

    await replicas.a.running.close();
    await waitUntil("B writes the file after A stopped", () => hosts('b') === '02:00:00:00:00:01,w-01,infinite\n', 5000, 10);
  });
});
