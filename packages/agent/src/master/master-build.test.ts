/**
 * The master builder's rules that need no mmdebstrap: what it accepts on its command line, where
 * it takes the archives from, how it reads the host reporter's install.txt, what the cache key
 * depends on (and what it does not: keys and URL), and the MBR it writes.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { planLayout, writePartitionTable } from './disk-layout';
import { readGpt, readMbr } from './image-inspect';
import { checkControlPlane, checkMasterName, hostAptMirrors, MasterBuildError, planMasterBuild, readAuthorizedKeys, readReporterInstall, removeStaleWork } from './master-build';

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

describe('ironlens master build: the partition tables', () => {
  const boot = Buffer.alloc(512, 0xab);
  const core = Buffer.alloc(3000, 0xcd);
  core.writeBigUInt64LE(2n, 0x1f4); // diskboot's block list as grub-mkimage leaves it (sector 2)
  const blank = (name: string, bytes: number) => {
    const img = join(dir, name);
    writeFileSync(img, '');
    truncateSync(img, bytes);
    return img;
  };
  const partx = (img: string) =>
    execFileSync('partx', ['--raw', '--noheadings', '--output', 'NR,START,END,TYPE,NAME', img], { encoding: 'utf8' })
      .trim()
      .split('\n');

  it('bios: boot.img code, one active Linux partition from sector 2048, 0x55aa, and core.img at sector 1 (nothing patched)', () => {
    const img = blank('bios.img', 4096 * 512);
    writePartitionTable(img, planLayout('bios', 4096 * 512), { bootImg: boot, coreImg: core });
    const mbr = readMbr(img);
    expect(mbr.signature).toBe(true);
    expect(mbr.bootCode.equals(Buffer.alloc(440, 0xab))).toBe(true);
    expect(mbr.partitions).toEqual([{ index: 1, active: true, type: 0x83, startSector: 2048, sectors: 2048 }]);
    const raw = readFileSync(img);
    expect(raw.subarray(512, 3512).equals(core)).toBe(true);
    expect(raw[3512]).toBe(0);
    expect(readGpt(img)).toBeUndefined();
    expect(() => writePartitionTable(img, planLayout('bios', 4096 * 512), { bootImg: boot, coreImg: Buffer.alloc(2048 * 512) })).toThrow(/does not fit/);
  });

  it('both: a protective MBR with boot.img pointing at the BIOS boot partition, a GPT with root 1, BIOS boot 14, ESP 15, backup at the end', () => {
    const size = 100 * 1024 * 1024;
    const img = blank('both.img', size);
    const layout = planLayout('both', size);
    writePartitionTable(img, layout, { bootImg: boot, coreImg: core, diskGuid: '01234567-89ab-cdef-0123-456789abcdef', partitionGuids: new Map([[1, 'aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee']]) });
    const mbr = readMbr(img);
    expect(mbr.signature).toBe(true);
    expect(mbr.partitions).toEqual([{ index: 1, active: false, type: 0xee, startSector: 1, sectors: 204799 }]);
    // boot.img's code, but its kernel sector (0x5c) names the BIOS boot partition (2048)
    const want = Buffer.alloc(440, 0xab);
    want.writeBigUInt64LE(2048n, 0x5c);
    expect(mbr.bootCode.equals(want)).toBe(true);
    const raw = readFileSync(img);
    const placed = raw.subarray(2048 * 512, 2048 * 512 + 3000);
    expect(placed.readBigUInt64LE(0x1f4), "core.img's block list: its second sector").toBe(2049n);
    expect(placed.subarray(0x200).equals(core.subarray(0x200))).toBe(true);
    // util-linux reads the table as written (it checks the CRCs too)
    expect(partx(img)).toEqual([
      '1 135168 202751 0fc63daf-8483-4772-8e79-3d69d8477de4 root',
      '14 2048 4095 21686148-6449-6e6f-744e-656564454649 BIOS\\x20boot',
      '15 4096 135167 c12a7328-f81f-11d2-ba4b-00a0c93ec93b EFI\\x20System',
    ]);
    const gpt = readGpt(img)!;
    expect(gpt.problems).toEqual([]);
    expect(gpt.diskGuid).toBe('01234567-89ab-cdef-0123-456789abcdef');
    expect(gpt.partitions.find((p) => p.number === 1)?.guid).toBe('aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee');
    // the ESP's type GUID as every firmware reads it from the disk
    expect(raw.subarray(2 * 512 + 14 * 128, 2 * 512 + 14 * 128 + 16).toString('hex')).toBe('28732ac11ff8d211ba4b00a0c93ec93b');
    expect(raw.subarray((204800 - 1) * 512, (204800 - 1) * 512 + 8).toString('latin1')).toBe('EFI PART');
  });

  it('uefi: no boot code and no BIOS boot partition; a damaged entry array is seen', () => {
    const size = 100 * 1024 * 1024;
    const img = blank('uefi.img', size);
    writePartitionTable(img, planLayout('uefi', size));
    const mbr = readMbr(img);
    expect(mbr.bootCode.equals(Buffer.alloc(440)), 'no BIOS boot code').toBe(true);
    expect(partx(img).map((l) => l.split(' ').slice(0, 3).join(' '))).toEqual(['1 135168 202751', '15 4096 135167']);
    expect(() => writePartitionTable(img, planLayout('both', size), {})).toThrow(/boot\.img/);
    const fd = openSync(img, 'r+');
    writeSync(fd, Buffer.from([0x42]), 0, 1, 2 * 512 + 40);
    closeSync(fd);
    expect(readGpt(img)!.problems).toEqual(['primary entries CRC32', 'backup entries differ']);
  });

  it('gives the firmware choice its own root filesystem key: uefi and both share one, bios keeps the key it had before UEFI', () => {
    const base = { os: 'debian-12', diskDir: dir, cacheDir: join(dir, 'cache'), mirror: 'http://deb.example/debian', securityMirror: 'http://sec.example/debian-security' };
    const both = planMasterBuild(base);
    expect(both.firmware).toBe('both');
    expect(both.inputs.efi?.packages).toEqual(['shim-signed', 'shim-helpers-amd64-signed', 'grub-efi-amd64-signed']);
    expect(planMasterBuild({ ...base, firmware: 'uefi' }).key).toBe(both.key);
    const bios = planMasterBuild({ ...base, firmware: 'bios' });
    expect(bios.key).not.toBe(both.key);
    expect(bios.inputs).not.toHaveProperty('efi');
    expect(bios.layout.table).toBe('mbr');
    expect(() => planMasterBuild({ ...base, firmware: 'coreboot' })).toThrow(/invalid --firmware "coreboot": one of both, uefi, bios/);
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
