/**
 * The release (issue 23), as an operator installs it: `npm run release` packs one tarball;
 * `npm install -g` of it into a temporary prefix, outside the repository, gives an `ironlens`
 * whose `serve`, started from another working directory, answers on both listeners with its data
 * in the configured absolute dir, and whose `devices list` works against it. Slow (npm installs
 * the dependencies and builds better-sqlite3 from the npm cache): runs once, in the sqlite project.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeTcpPort, sleep, waitUntil } from '@ironlens/core/testing';
import { afterAll, describe, expect, it } from 'vitest';

const REPO = join(import.meta.dirname, '..', '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'ironlens-release-'));
const children: Array<ReturnType<typeof spawn>> = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
});

describe('the release package', () => {
  it('npm pack → npm install -g → ironlens serve elsewhere answers; its data is where it was told; devices list works', { timeout: 900_000 }, async () => {
    const tgz = execFileSync(process.execPath, ['--import', 'tsx', join(REPO, 'scripts', 'pack-release.ts'), join(dir, 'out')], { cwd: REPO, encoding: 'utf8' }).trim().split('\n').at(-1) as string;
    expect(tgz).toMatch(/ironlens-\d+\.\d+\.\d+\.tgz$/);
    const listing = execFileSync('tar', ['tzf', tgz], { encoding: 'utf8' }).split('\n');
    expect(listing).toContain('package/packages/cli/dist/main.js');
    expect(listing).toContain('package/packages/web/dist/index.html');
    expect(listing.filter((f) => f.endsWith('.ts') || f.includes('node_modules/'))).toEqual([]);
    // What `master build` reads at run time (issue 29, finding 12), and nothing only tests use.
    for (const f of ['packages/agent/assets/master/debian-12/essential-hook.sh', 'packages/agent/assets/master/debian-12/customize-hook.sh', 'packages/metal/assets/host-reporter/install.txt', 'packages/metal/assets/host-reporter/ironlens-host-reporter']) {
      expect(listing).toContain(`package/${f}`);
    }
    const bundle = listing.filter((f) => f.startsWith('package/packages/cli/dist/') && f.endsWith('.js'));
    for (const f of bundle) expect(execFileSync('tar', ['xzOf', tgz, f], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }), f).not.toMatch(/startTgtd|function artifactPath/);

    const prefix = join(dir, 'prefix');
    execFileSync('npm', ['install', '-g', '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund', '--allow-scripts=better-sqlite3,ssh2,cpu-features', tgz], { cwd: dir, stdio: 'pipe', timeout: 800_000 });
    const bin = join(prefix, 'bin', 'ironlens');
    expect(existsSync(bin)).toBe(true);
    // The installed package links nothing back into the repository.
    expect(readdirSync(join(prefix, 'lib', 'node_modules'))).toEqual(['ironlens']);
    expect(execFileSync(bin, ['--help'], { encoding: 'utf8' })).toMatch(/^usage: ironlens <command>/);
    expect(execFileSync(bin, ['master', 'build', '--help'], { encoding: 'utf8' })).toMatch(/^usage: ironlens master build --os debian-12 --disk-dir DIR/);
    // A build from the installed package, up to its first stage: the plan reads the hooks and the
    // host reporter from the package (it was ENOENT), says what it builds, then mmdebstrap fails at
    // once against a mirror where nothing listens (this test downloads nothing).
    const disks = join(dir, 'disks');
    mkdirSync(disks);
    const closed = await freeTcpPort();
    const build = spawnSync(bin, ['master', 'build', '--os', 'debian-12', '--disk-dir', disks, '--cache-dir', join(dir, 'master-cache'), '--mirror', `http://127.0.0.1:${closed}/debian`, '--security-mirror', `http://127.0.0.1:${closed}/debian-security`], { encoding: 'utf8', timeout: 300_000, env: { ...process.env, IRONLENS_FROM_SOURCE: '' } });
    expect(build.stderr).not.toMatch(/ENOENT|host reporter's files are missing|Cannot find module/);
    expect(build.stderr).toMatch(/\[master\] Debian [^\n]* → [^\n]*_tpl_debian_12\.img \(4 GiB, boots under UEFI and BIOS\); root filesystem key [0-9a-f]{16}/);
    expect(build.status).toBe(1);

    const cwd = join(dir, 'elsewhere');
    const data = join(dir, 'state', 'ironlens');
    mkdirSync(cwd);
    const env = { ...process.env, IRONLENS_DATA_DIR: data, IRONLENS_BOOT_LISTEN: '127.0.0.1:0', IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0', IPXE_CP_DNSMASQ_RELOAD: 'false', IRONLENS_FROM_SOURCE: '' };
    const child = spawn(bin, ['serve'], { cwd, env, stdio: ['ignore', 'ignore', 'pipe'] });
    children.push(child);
    let log = '';
    child.stderr?.on('data', (b) => {
      log += String(b);
    });
    await waitUntil('serve prints its console address', () => /console on .* \(http:\/\/[0-9.:]+\//.test(log), 120_000, 100);
    const boot = /provisioning API on [^ ]+ \((http:\/\/[0-9.:]+);/.exec(log)?.[1] as string;
    const consoleUrl = /console on [^ ]+ \((http:\/\/[0-9.:]+)\//.exec(log)?.[1] as string;
    expect(log).toContain(`data dir ${data} (SQLite store ironlens.db`);
    expect((await fetch(`${boot}/healthz`)).status).toBe(200);
    expect((await fetch(`${consoleUrl}/`)).headers.get('content-type')).toMatch(/text\/html/);
    expect((await fetch(`${boot}/devices/report?mac=02:00:00:00:00:07`)).status).toBe(200);
    expect(existsSync(join(data, 'ironlens.db'))).toBe(true);
    expect(readdirSync(cwd)).toEqual([]); // nothing lands in the working directory
    expect((await fetch(`${consoleUrl}/api/v1/versions`)).status).toBe(200);
    expect((await fetch(`${consoleUrl}/api/cluster/clusters`)).status).toBe(200);
    expect((await fetch(`${consoleUrl}/redoc/redoc.standalone.js`)).status).toBe(200);
    // What serve loads at first use (the Kubernetes client shortly after listening) is in the package too.
    await sleep(1500);
    expect(log).not.toMatch(/could not be loaded|Cannot find module/);

    const list = execFileSync(bin, ['devices', 'list', '--url', consoleUrl, '-o', 'json'], { cwd, encoding: 'utf8', env });
    expect(JSON.parse(list).map((d: { mac: string }) => d.mac)).toEqual(['02:00:00:00:00:07']);
    child.kill('SIGTERM');
    await new Promise((r) => child.on('exit', r));
    expect(child.exitCode).toBe(0);
  });
});
