/**
 * `ironlens install-service` (issue 23): the units it writes pass `systemd-analyze verify` (the
 * real one, Debian's systemd package; no running systemd needed), are hardened, and the
 * environment file lists every setting the command reads, commented.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { productionSources } from '@ironlens/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { installService, nextSteps, renderEnvFile, renderUnit, ServiceError, serviceOptions } from './install-service';
import { main } from './main';
import { CLIENT_SETTINGS, SETTINGS, TEST_ONLY_SETTINGS } from './settings';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ironlens-service-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Whoever runs the tests: the owner of every tree they make. */
const ME = process.getuid?.() ?? 0;

/**
 * A package as `npm install -g` lays it out, in this test's own folder, owned by whoever runs the
 * test and writable by nobody else (never the checkout, whose owner and modes are not the test's).
 */
function packageTree(): { root: string; entry: string } {
  const root = join(dir, 'lib', 'node_modules', 'ironlens');
  for (const d of ['packages/cli/bin', 'packages/cli/dist', 'node_modules/pino/lib']) mkdirSync(join(root, d), { recursive: true, mode: 0o755 });
  const entry = join(root, 'packages', 'cli', 'bin', 'ironlens.mjs');
  writeFileSync(entry, 'import "../dist/main.js";\n', { mode: 0o755 });
  writeFileSync(join(root, 'packages', 'cli', 'dist', 'main.js'), '\n', { mode: 0o644 });
  writeFileSync(join(root, 'node_modules', 'pino', 'lib', 'pino.js'), '\n', { mode: 0o644 });
  writeFileSync(join(root, 'package.json'), '{}\n', { mode: 0o644 });
  // Whatever the umask: nothing of it writable by a group or others.
  for (const d of [dir, join(dir, 'lib'), join(dir, 'lib', 'node_modules')]) chmodSync(d, 0o755);
  return { root, entry };
}

/** The service's options with the package tree's entry point, to be owned by whoever runs the test. */
function ownOptions(kind: 'serve' | 'agent', flags: Record<string, string> = {}) {
  return { ...serviceOptions(kind, { unitDir: join(dir, 'units'), envDir: join(dir, 'etc'), ...flags }), entry: packageTree().entry, codeOwner: ME };
}

function verify(unit: string): { code: number; out: string } {
  try {
    execFileSync('systemd-analyze', ['--version'], { stdio: 'ignore' });
  } catch {
    throw new Error('systemd-analyze is missing: apt-get install systemd (scripts/install-test-deps.sh installs it)');
  }
  const r = spawnSync('systemd-analyze', ['verify', '--man=no', unit], { encoding: 'utf8' });
  return { code: r.status ?? -1, out: `${r.stdout}${r.stderr}` };
}

describe('ironlens install-service', () => {
  for (const kind of ['serve', 'agent'] as const) {
    it(`writes a ${kind} unit that systemd-analyze verify accepts, hardened, and an env file (0600) with every ${kind} setting commented`, () => {
      const o = ownOptions(kind);
      const w = installService(o);
      const unit = readFileSync(w.unit, 'utf8');
      const v = verify(w.unit);
      // systemd-analyze may warn about the user missing on this machine; the unit itself must parse.
      expect(v.out).not.toMatch(/Unknown (key|section)|Failed to parse|Invalid|not executable|Missing/i);
      expect(v.code).toBe(0);
      for (const line of ['NoNewPrivileges=yes', 'ProtectSystem=strict', 'PrivateTmp=yes', 'CapabilityBoundingSet=', 'UMask=0077']) expect(unit).toContain(`\n${line}\n`);
      expect(unit).toContain(`ExecStart=${process.execPath} ${o.entry} ${kind}\n`);
      expect(unit).toContain(`EnvironmentFile=-${join(dir, 'etc', `${kind}.env`)}\n`);
      if (kind === 'serve') {
        expect(unit).toContain('\nUser=ironlens\n');
        expect(unit).toContain('\nStateDirectory=ironlens\n');
        expect(unit).toContain('\nEnvironment=IRONLENS_DATA_DIR=/var/lib/ironlens\n');
        expect(unit).toContain('\nProtectHome=yes\n');
      } else {
        expect(unit).toContain('\nUser=root\n');
        expect(unit).toContain('\nReadWritePaths=/home/iscsi_img -/run/tgtd -/sys/kernel/config\n');
        // The default DISK_DIR is under /home: ProtectHome=yes would hide it (see below).
        expect(unit).toContain('\nProtectHome=tmpfs\nBindPaths=/home/iscsi_img\n');
      }
      const env = readFileSync(w.env, 'utf8');
      expect(statSync(w.env).mode & 0o777).toBe(0o600);
      for (const s of SETTINGS.filter((x) => x.for.includes(kind))) expect(env).toMatch(new RegExp(`^#${s.name}=`, 'm'));
      // Nothing is set: every setting line is a comment.
      expect(env.split('\n').filter((l) => l.trim() && !l.startsWith('#'))).toEqual([]);
    });
  }

  it('keeps an existing env file (the operator’s settings) and puts another data dir in ReadWritePaths', () => {
    const o = ownOptions('serve', { dataDir: '/srv/ironlens', user: 'lab' });
    installService(o);
    writeFileSync(join(dir, 'etc', 'serve.env'), 'IPXE_CP_TOKEN=mine\n');
    expect(installService(o).envKept).toBe(true);
    expect(readFileSync(join(dir, 'etc', 'serve.env'), 'utf8')).toBe('IPXE_CP_TOKEN=mine\n');
    const unit = readFileSync(join(dir, 'units', 'ironlens.service'), 'utf8');
    expect(unit).toContain('\nReadWritePaths=/srv/ironlens\n');
    expect(unit).toContain('\nUser=lab\n');
    expect(verify(join(dir, 'units', 'ironlens.service')).code).toBe(0);
  });

  it('--boot-services: the serve unit grants exactly what its own dnsmasq needs, ambient so that dnsmasq gets them, and still verifies', async () => {
    const plain = renderUnit(serviceOptions('serve', {}));
    expect(plain).toContain('\nCapabilityBoundingSet=\nAmbientCapabilities=\n');
    const o = serviceOptions('serve', { unitDir: join(dir, 'units'), envDir: join(dir, 'etc') }, { bootServices: true });
    const w = installService(o);
    const unit = readFileSync(w.unit, 'utf8');
    expect(unit).toContain('\nCapabilityBoundingSet=CAP_NET_BIND_SERVICE CAP_NET_ADMIN CAP_NET_RAW\nAmbientCapabilities=CAP_NET_BIND_SERVICE CAP_NET_ADMIN CAP_NET_RAW\n');
    // Everything else as without it: the same user, the same sandbox.
    expect(unit.replace(/^(CapabilityBoundingSet|AmbientCapabilities)=.*$/gm, '$1=')).toBe(renderUnit({ ...o, bootServices: false }));
    expect(unit).toContain('\nNoNewPrivileges=yes\n');
    const v = verify(w.unit);
    expect(v.out).not.toMatch(/Unknown (key|section)|Failed to parse|Invalid|not executable|Missing/i);
    expect(v.code).toBe(0);
    expect(() => serviceOptions('agent', {}, { bootServices: true })).toThrow('--boot-services is for serve');
    // Through the command line, with its next steps.
    const out: string[] = [];
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((s: string) => out.push(String(s)) > 0) as typeof process.stdout.write;
    try {
      expect(await main(['install-service', 'serve', '--boot-services', '--dry-run', '--unit-dir', join(dir, 'u'), '--env-dir', join(dir, 'e')])).toBe(0);
    } finally {
      process.stdout.write = write;
    }
    expect(out.join('')).toContain('\nAmbientCapabilities=CAP_NET_BIND_SERVICE CAP_NET_ADMIN CAP_NET_RAW\n');
    expect(out.join('')).toContain('apt-get install dnsmasq-base ipxe');
  });

  it('says what to run next for each service: the storage target only for the agent, the boot packages only with --boot-services', () => {
    const steps = (kind: string, bootServices = false) => nextSteps(serviceOptions(kind, {}, { bootServices }), false).split('\n').filter((l) => l.startsWith('  ')).map((l) => l.trim().split(/\s+/)[0]);
    expect(steps('serve')).toEqual(['useradd', '$EDITOR', 'systemctl', 'systemctl', 'journalctl']);
    expect(steps('serve', true)).toEqual(['useradd', 'apt-get', '$EDITOR', 'systemctl', 'systemctl', 'journalctl']);
    expect(steps('agent')).toEqual(['mkdir', '$EDITOR', 'systemctl', 'systemctl', 'journalctl']);
  });

  it('refuses values that would not stay one line of a unit file', () => {
    for (const flags of [{ user: 'root' }, { user: 'a b' }, { dataDir: 'relative' }, { dataDir: '/srv/x\nExecStartPre=/bin/sh' }, { dataDir: '/srv/%h' }, { dataDir: '/srv/../etc' }]) {
      expect(() => serviceOptions('serve', flags)).toThrow(ServiceError);
    }
    expect(() => serviceOptions('kind', {})).toThrow('the service is serve or agent');
  });

  it('--dry-run prints the unit, the env file and the next steps, and writes nothing', async () => {
    const out: string[] = [];
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((s: string) => out.push(String(s)) > 0) as typeof process.stdout.write;
    try {
      expect(await main(['install-service', 'agent', '--dry-run', '--unit-dir', join(dir, 'u'), '--env-dir', join(dir, 'e'), '--disk-dir', '/srv/disks'])).toBe(0);
    } finally {
      process.stdout.write = write;
    }
    const text = out.join('');
    const o = serviceOptions('agent', { unitDir: join(dir, 'u'), envDir: join(dir, 'e'), diskDir: '/srv/disks' });
    expect(text).toContain(renderUnit(o));
    expect(text).toContain(renderEnvFile(o));
    expect(text).toContain('systemctl enable --now ironlens-agent');
    expect(text).toContain('dry run: nothing written');
    expect(() => statSync(join(dir, 'u'))).toThrow();
  });
});

describe('what install-service refuses or adapts (issue 29, finding 12)', () => {
  const optionsFor = (kind: 'serve' | 'agent', entry: string, codeOwner = ME) => ({ ...serviceOptions(kind, { unitDir: join(dir, 'units'), envDir: join(dir, 'etc') }), entry, codeOwner });

  it("refuses a unit whose code (the package, its node_modules, a folder above) another user could change, as root's agent or serve", () => {
    const { root, entry } = packageTree();
    expect(installService(optionsFor('agent', entry)).unit).toBe(join(dir, 'units', 'ironlens-agent.service'));
    const refusals: Array<[string, () => void, () => void]> = [
      ['a dependency writable by anyone', () => chmodSync(join(root, 'node_modules', 'pino', 'lib', 'pino.js'), 0o666), () => chmodSync(join(root, 'node_modules', 'pino', 'lib', 'pino.js'), 0o644)],
      ['the bundle writable by its group', () => chmodSync(join(root, 'packages', 'cli', 'dist', 'main.js'), 0o664), () => chmodSync(join(root, 'packages', 'cli', 'dist', 'main.js'), 0o644)],
      ['a folder above the package writable by its group', () => chmodSync(join(dir, 'lib'), 0o775), () => chmodSync(join(dir, 'lib'), 0o755)],
      ['node_modules writable by anyone', () => chmodSync(join(root, 'node_modules'), 0o777), () => chmodSync(join(root, 'node_modules'), 0o755)],
      ['a symlink to a folder anyone may write', () => {
        mkdirSync(join(dir, 'shared'), { mode: 0o777 });
        chmodSync(join(dir, 'shared'), 0o777);
        symlinkSync(join(dir, 'shared'), join(root, 'node_modules', 'linked'));
      }, () => rmSync(join(root, 'node_modules', 'linked'))],
    ];
    for (const [what, spoil, mend] of refusals) {
      spoil();
      for (const kind of ['agent', 'serve'] as const) expect(() => installService(optionsFor(kind, entry)), `${kind}: ${what}`).toThrow(/refusing to write a unit that runs .* its code could be changed by someone else than root/);
      mend();
    }
    expect(installService(optionsFor('serve', entry)).unit).toBe(join(dir, 'units', 'ironlens.service'));
  });

  it('refuses a package owned by another user than the one the code must belong to, whoever runs the test', () => {
    const { root, entry } = packageTree();
    // The tree is this process' own; the code must belong to another uid (not root's either).
    const other = ME === 4242 ? 4243 : 4242;
    for (const kind of ['agent', 'serve'] as const) {
      expect(() => installService(optionsFor(kind, entry, other)), kind).toThrow(`${root}: owned by uid ${ME}, not ${other}`);
    }
    // Folders above the package and the Node.js binary may be root's too; the package's own files may not.
    expect(() => installService(optionsFor('serve', entry))).not.toThrow();
  });

  it("binds a data or disk dir under /home into the sandbox instead of hiding it, and the unit still verifies", () => {
    const cases: Array<[ReturnType<typeof serviceOptions>, string]> = [
      [serviceOptions('agent', { unitDir: join(dir, 'a1') }), '\nProtectHome=tmpfs\nBindPaths=/home/iscsi_img\n'],
      [serviceOptions('agent', { unitDir: join(dir, 'a2'), diskDir: '/srv/disks' }), '\nProtectHome=yes\n'],
      [serviceOptions('agent', { unitDir: join(dir, 'a3'), diskDir: '/root/disks' }), '\nProtectHome=tmpfs\nBindPaths=/root/disks\n'],
      [serviceOptions('serve', { unitDir: join(dir, 's1'), dataDir: '/home/ironlens/state' }), '\nProtectHome=tmpfs\nBindPaths=/home/ironlens/state\n'],
      [serviceOptions('serve', { unitDir: join(dir, 's2'), dataDir: '/homework' }), '\nProtectHome=yes\n'],
    ];
    for (const [o, wanted] of cases) {
      const unit = renderUnit(o);
      expect(unit, o.kind).toContain(wanted);
      expect(unit.match(/^ProtectHome=/gm)).toHaveLength(1);
      mkdirSync(o.unitDir, { recursive: true });
      const file = join(o.unitDir, 'x.service');
      writeFileSync(file, unit);
      const v = verify(file);
      expect(v.out).not.toMatch(/Unknown (key|section)|Failed to parse|Invalid/i);
      expect(v.code).toBe(0);
    }
  });
});

describe('the settings list', () => {
  it('names every variable the production code reads (so the env files miss none)', () => {
    const repo = join(import.meta.dirname, '..', '..', '..');
    const read = new Set<string>();
    for (const f of productionSources(repo)) {
      for (const m of readFileSync(f, 'utf8').matchAll(/['"`]((?:IRONLENS|IPXE_CP|IPXE_AGENT|KIND_K8S)_[A-Z0-9_]+|DISK_DIR)['"`]/g)) read.add(m[1]);
    }
    // The service command's own flag mirrors are not settings of a running process.
    const flagMirrors = new Set(['IRONLENS_SERVICE_USER', 'IRONLENS_SERVICE_UNIT_DIR', 'IRONLENS_SERVICE_ENV_DIR']);
    const listed = new Set(SETTINGS.map((s) => s.name));
    const missing = [...read].filter((n) => !listed.has(n) && !TEST_ONLY_SETTINGS.has(n) && !CLIENT_SETTINGS.has(n) && !flagMirrors.has(n)).sort();
    expect(missing).toEqual([]);
  });
});
