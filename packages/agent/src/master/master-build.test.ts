/**
 * The master builder's rules that need no mmdebstrap: what it accepts on its command line, where
 * it takes the archives from, how it reads the host reporter's install.txt, what the cache key
 * depends on (and what it does not: keys and URL), and the MBR it writes.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readMbr } from './image-inspect';
import { checkControlPlane, checkMasterName, hostAptMirrors, MasterBuildError, planMasterBuild, readAuthorizedKeys, readReporterInstall, removeStaleWork, writeBootSectors } from './master-build';

const dir = mkdtempSync(join(tmpdir(), 'ironlens-master-unit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const KEY = `ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI${'B'.repeat(43)} someone@lab`;

describe('ironlens master build: inputs', () => {
  it('takes a key line or a file of keys, skipping comments, refusing anything else', () => {
    const f = join(dir, 'keys');
    writeFileSync(f, `# ops\n${KEY}\n\nssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC${'x'.repeat(40)}\n`);
    expect(readAuthorizedKeys([f, KEY])).toEqual([KEY, `ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC${'x'.repeat(40)}`]);
    writeFileSync(f, `${KEY}\ncommand="rm -rf /" ${KEY}\n`);
    expect(() => readAuthorizedKeys([f])).toThrow(/not an SSH public key/);
    expect(() => readAuthorizedKeys(['/no/such/file'])).toThrow(/neither an SSH public key nor a file/);
    expect(() => readAuthorizedKeys([`${KEY}\nssh-ed25519 AAAA injected`])).toThrow(MasterBuildError);
  });

  it('checks names, URLs and package names before anything reaches a command line', () => {
    expect(checkMasterName('debian_12')).toBe('debian_12');
    for (const bad of ['', '../x', 'a/b', 'Debian', '-x', 'a b', 'x'.repeat(65)]) expect(() => checkMasterName(bad), bad).toThrow(MasterBuildError);
    expect(checkControlPlane('http://10.0.0.5:4839/')).toBe('http://10.0.0.5:4839');
    expect(checkControlPlane('https://[fd00::1]:4839')).toBe('https://[fd00::1]:4839');
    for (const bad of ['ftp://x', 'http://x:99999', 'http://x/$(id)', 'http://a b', 'http://x\nCONTROL_PLANE=evil']) expect(() => checkControlPlane(bad), bad).toThrow(MasterBuildError);
    const plan = (extra: object) => planMasterBuild({ os: 'debian-12', diskDir: dir, cacheDir: join(dir, 'cache'), mirror: 'http://deb.example/debian', ...extra });
    expect(() => plan({ packages: ['curl;rm'] })).toThrow(/invalid Debian package name/);
    expect(() => plan({ size: '512M' })).toThrow(/at least 1G/);
    expect(() => planMasterBuild({ os: 'windows-11', diskDir: dir })).toThrow(/unknown --os "windows-11": one of debian-12/);
    expect(() => plan({ mirror: 'http://deb.example/debian --include=x' })).toThrow(/invalid mirror URL/);
  });

  it('keys the root filesystem by OS, packages, archives and hooks; not by keys, URL, size or name', () => {
    const base = { os: 'debian-12', diskDir: dir, cacheDir: join(dir, 'cache'), mirror: 'http://deb.example/debian', securityMirror: 'http://sec.example/debian-security' };
    const k = planMasterBuild(base).key;
    expect(planMasterBuild({ ...base, authorizedKeys: [KEY], controlPlane: 'http://10.0.0.5:4839', size: '8G', name: 'other' }).key).toBe(k);
    expect(planMasterBuild({ ...base, packages: ['curl'] }).key).not.toBe(k);
    expect(planMasterBuild({ ...base, packages: ['sudo'] }).key, 'a package already in the list').toBe(k);
    expect(planMasterBuild({ ...base, mirror: 'http://other.example/debian' }).key).not.toBe(k);
    const p = planMasterBuild(base);
    expect(p.target).toBe(join(dir, '_tpl_debian_12.img'));
    expect(p.rootfsDir).toBe(join(dir, 'cache', 'rootfs', `debian-12-${k}`));
    expect(p.inputs.sources).toEqual(['deb http://deb.example/debian bookworm main', 'deb http://deb.example/debian bookworm-updates main', 'deb http://sec.example/debian-security bookworm-security main']);
  });

  it("takes the archives from this host's apt sources, deb822 or one-line", () => {
    const apt = join(dir, 'apt');
    mkdirSync(join(apt, 'sources.list.d'), { recursive: true });
    writeFileSync(
      join(apt, 'sources.list.d', 'debian.sources'),
      'Types: deb\nURIs: http://mirror.lab/debian\nSuites: bookworm bookworm-updates\nComponents: main\n\nTypes: deb\nURIs: http://mirror.lab/debian-security\nSuites: bookworm-security\nComponents: main\n',
    );
    writeFileSync(join(apt, 'sources.list.d', 'other.list'), 'deb [arch=amd64] https://packages.example/apt stable main\n');
    expect(hostAptMirrors(apt)).toEqual({ main: 'http://mirror.lab/debian', security: 'http://mirror.lab/debian-security' });
    const one = join(dir, 'apt1');
    mkdirSync(one);
    writeFileSync(join(one, 'sources.list'), '# x\ndeb http://ftp.lab/debian bookworm main\ndeb http://ftp.lab/debian-security bookworm-security main\n');
    expect(hostAptMirrors(one)).toEqual({ main: 'http://ftp.lab/debian', security: 'http://ftp.lab/debian-security' });
  });

  it("reads the host reporter's install.txt and refuses paths outside the image's grammar", () => {
    const shipped = readReporterInstall(join(__dirname, '..', '..', '..', 'metal', 'assets', 'host-reporter'));
    expect(shipped?.files.map((f) => f.target)).toContain('/usr/local/sbin/ironlens-host-reporter');
    expect(shipped?.enable).toContain('ironlens-host-reporter.service');
    expect(shipped?.packages).toContain('python3-minimal');
    const r = join(dir, 'reporter');
    mkdirSync(r);
    writeFileSync(join(r, 'x'), 'x');
    for (const bad of ['file x /etc/../../x 0644', 'file x etc/x 0644', 'file x /etc/x 9999', 'file y /etc/y 0644', 'enable ../x.service', 'chmod x']) {
      writeFileSync(join(r, 'install.txt'), `${bad}\n`);
      expect(() => readReporterInstall(r), bad).toThrow(MasterBuildError);
    }
    // Missing altogether: refused, never a master without its reporter (issue 29, finding 12).
    expect(() => readReporterInstall(join(dir, 'none'))).toThrow(/host reporter's files are missing/);
    expect(() => planMasterBuild({ os: 'debian-12', diskDir: dir, reporterDir: join(dir, 'none'), mirror: 'http://mirror.lab/debian', securityMirror: 'http://mirror.lab/debian-security' })).toThrow(MasterBuildError);
  });
});

describe('ironlens master build: the boot sectors', () => {
  it('writes boot.img code, one active Linux partition from sector 2048, 0x55aa, and core.img at sector 1', () => {
    const img = join(dir, 'disk.img');
    writeFileSync(img, Buffer.alloc(4096 * 512));
    const boot = Buffer.alloc(512, 0xab);
    const core = Buffer.alloc(3000, 0xcd);
    writeBootSectors(img, boot, core, 2048, 2048);
    const mbr = readMbr(img);
    expect(mbr.signature).toBe(true);
    expect(mbr.bootCode.equals(Buffer.alloc(440, 0xab))).toBe(true);
    expect(mbr.partitions).toEqual([{ index: 1, active: true, type: 0x83, startSector: 2048, sectors: 2048 }]);
    const raw = readFileSync(img);
    expect(raw.subarray(512, 3512).equals(core)).toBe(true);
    expect(raw[3512]).toBe(0);
    expect(() => writeBootSectors(img, boot, Buffer.alloc(2048 * 512), 2048, 2048)).toThrow(/does not fit/);
  });
});

describe('ironlens master build: what a killed build left', () => {
  it("removes temporary trees and half disks of builds whose process is gone, and nobody else's", () => {
    const cache = join(dir, 'stale-cache');
    const disks = join(dir, 'stale-disks');
    const dead = 2 ** 22 + 12345; // above pid_max's default: no such process
    for (const d of [join(cache, 'rootfs', `.tmp-abcd-${dead}-aa11`), join(cache, 'rootfs', `.tmp-abcd-${process.ppid}-bb22`), join(cache, 'rootfs', 'debian-12-abcd'), join(cache, 'work', `${dead}-cc33`)]) mkdirSync(d, { recursive: true });
    mkdirSync(disks);
    for (const f of [`.master-debian_12-${dead}-dd44.part`, `.master-debian_12-${process.ppid}-ee55.part`, '_tpl_debian_12.img']) writeFileSync(join(disks, f), '');
    removeStaleWork(cache, disks);
    expect(readdirSync(join(cache, 'rootfs')).sort()).toEqual([`.tmp-abcd-${process.ppid}-bb22`, 'debian-12-abcd']);
    expect(readdirSync(join(cache, 'work'))).toEqual([]);
    expect(readdirSync(disks).sort()).toEqual([`.master-debian_12-${process.ppid}-ee55.part`, '_tpl_debian_12.img']);
  });
});
