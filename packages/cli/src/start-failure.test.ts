/**
 * A start that fails on a taken port: exit 1, and the error names the setting that moves the
 * listener. (That the process then exits instead of hanging with another listener open is
 * checked on the compiled command, in compiled.test.ts, and for serve's listeners in serve.test.ts.)
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { type AddressInfo, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from './main';

let dir: string;
let taken: Server;
let takenPort: number;
let saved: NodeJS.ProcessEnv;

async function run(argv: string[], env: Record<string, string>): Promise<{ code: number; stderr: string }> {
  const err: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  Object.assign(process.env, env);
  process.stderr.write = ((s: string) => err.push(String(s)) > 0) as typeof process.stderr.write;
  try {
    return { code: await main(argv), stderr: err.join('') };
  } finally {
    process.stderr.write = write;
  }
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ironlens-start-failure-'));
  saved = { ...process.env };
  taken = createServer();
  await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
  takenPort = (taken.address() as AddressInfo).port;
});

afterEach(async () => {
  for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
  Object.assign(process.env, saved);
  await new Promise((r) => taken.close(r));
  rmSync(dir, { recursive: true, force: true });
});

describe('a failed start', () => {
  it('ironlens serve exits 1 and names IRONLENS_CONSOLE_LISTEN', async () => {
    const r = await run(['serve', '--data-dir', join(dir, 'data'), '--boot-listen', 'off', '--console-listen', `127.0.0.1:${takenPort}`], { IPXE_CP_DNSMASQ_RELOAD: 'false' });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`ironlens serve: cannot listen on 127.0.0.1:${takenPort} (EADDRINUSE); change IRONLENS_CONSOLE_LISTEN (--console-listen), or set it to off`);
  });

  it('ironlens agent exits 1 and names IRONLENS_AGENT_LISTEN', async () => {
    mkdirSync(join(dir, 'disks'));
    const r = await run(['agent', '--agent-listen', `127.0.0.1:${takenPort}`], { DISK_DIR: join(dir, 'disks'), IPXE_AGENT_TOKEN: 't', IRONLENS_LOG_LEVEL: 'silent' });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^ironlens agent: .*EADDRINUSE.*; change IRONLENS_AGENT_LISTEN \(--agent-listen\)\n$/);
  });

  it('ironlens kind exits 1 and names KIND_K8S_WEB_HOST / KIND_K8S_WEB_PORT', async () => {
    const r = await run(['kind'], { KIND_K8S_WEB_PORT: String(takenPort), KIND_K8S_DB: join(dir, 'kind.sqlite'), KIND_K8S_CLUSTERS_DIR: join(dir, 'clusters') });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^ironlens kind: .*EADDRINUSE.*; change KIND_K8S_WEB_HOST \/ KIND_K8S_WEB_PORT\n$/);
  });
});

describe('a start with boot services (IRONLENS_BOOT_SERVICES) that cannot run them', () => {
  const boot = (extra: Record<string, string>) => ({ IRONLENS_BOOT_SERVICES: 'dhcp', IRONLENS_BOOT_INTERFACE: 'lo', IRONLENS_BOOT_DHCP_RANGE: '10.9.0.100,10.9.0.200', ...extra });

  it("exits 1 naming Debian's ipxe package when the iPXE binaries are missing, before it opens anything", async () => {
    const empty = join(dir, 'no-ipxe');
    mkdirSync(empty);
    // dnsmasq itself is found (a stand-in path that exists): the missing piece is iPXE.
    const r = await run(['serve', '--data-dir', join(dir, 'data'), '--boot-listen', '127.0.0.1:0', '--console-listen', 'off'], boot({ IRONLENS_BOOT_IPXE_DIR: empty, IRONLENS_BOOT_DNSMASQ: process.execPath }));
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `ironlens serve: IRONLENS_BOOT_SERVICES: ${empty} lacks the iPXE binaries undionly.kpxe, snponly.efi that TFTP hands to PXE firmware (Debian package ipxe: apt-get install ipxe; or point IRONLENS_BOOT_IPXE_DIR at its /usr/lib/ipxe)\n`,
    );
    expect(existsSync(join(dir, 'data', 'ironlens.db')), 'no store was opened').toBe(false);
  });

  it('exits 1 naming dnsmasq-base when dnsmasq is missing, and the setting when a value is outside its grammar', async () => {
    const r = await run(['serve', '--data-dir', join(dir, 'data'), '--boot-listen', '127.0.0.1:0', '--console-listen', 'off'], boot({ IRONLENS_BOOT_DNSMASQ: join(dir, 'no-dnsmasq') }));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`dnsmasq not found at ${join(dir, 'no-dnsmasq')} (Debian package dnsmasq-base: apt-get install dnsmasq-base; or set IRONLENS_BOOT_DNSMASQ)`);
    const bad = await run(['serve', '--data-dir', join(dir, 'data'), '--boot-listen', '127.0.0.1:0', '--console-listen', 'off'], boot({ IRONLENS_BOOT_URL: 'http://10.9.0.5:4839/x;shell' }));
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^ironlens serve: IRONLENS_BOOT_URL must be http\(s\):\/\/host\[:port\]/);
    const off = await run(['serve', '--data-dir', join(dir, 'data'), '--boot-listen', 'off', '--console-listen', 'off'], boot({ IRONLENS_BOOT_IPXE_DIR: '/usr/lib/ipxe', IRONLENS_BOOT_URL: '' }));
    expect(off.code).toBe(1);
    expect(off.stderr).toContain('IRONLENS_BOOT_SERVICES needs the provisioning listener');
  });
});
