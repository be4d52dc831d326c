/**
 * The master image `ironlens master build --os debian-12` makes (`--firmware both`, the
 * default), read without mounting it (docs/master-images.md): the GPT with its BIOS boot
 * partition and EFI System Partition, GRUB's BIOS stages, the ESP's signed shim and GRUB (read
 * with mtools), the kernel and
 * the initramfs with open-iscsi's iBFT login, no SSH host key, the authorized key given, the
 * host reporter and its control-plane URL. It builds from the root filesystem that
 * scripts/build-test-master.sh cached (test-all.sh runs it before vitest): a rebuild with a new
 * key and URL must only assemble the disk. A build that fails leaves nothing under `_tpl_`.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ext4Reader, cpioNames, peSignature, readGpt, readMbr, readSectors } from './image-inspect';
import { buildMaster, type MasterBuildResult, MasterBuildError, planMasterBuild } from './master-build';

const work = mkdtempSync(join(tmpdir(), `ironlens-master-image-${process.pid}-`));
const disks = join(work, 'disks');
const KEY = `ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI${'A'.repeat(43)} image-test-${process.pid}`;
const CP = 'http://192.0.2.10:4839';
let built: MasterBuildResult;
let fs: Ext4Reader;

beforeAll(async () => {
  execFileSync('mkdir', ['-p', disks]);
  const plan = planMasterBuild({ os: 'debian-12', diskDir: disks });
  if (!existsSync(join(plan.rootfsDir, 'done'))) {
    throw new Error(
      `no cached root filesystem for these inputs (${plan.rootfsDir}): run scripts/build-test-master.sh first (test-all.sh does; minutes the first time, downloads from ${plan.inputs.sources[0]})`,
    );
  }
  built = await buildMaster({ os: 'debian-12', diskDir: disks, authorizedKeys: [KEY], controlPlane: CP, log: () => {} });
  rootStart = built.partitions.find((p) => p.role === 'root')!.start;
  fs = new Ext4Reader(built.path, rootStart * 512);
}, 300_000);

let rootStart: number;
const ESP_OFFSET = 4096 * 512;
const mtools = (tool: string, ...args: string[]) => execFileSync(tool, ['-i', `${built.path}@@${ESP_OFFSET}`, ...args], { env: { ...process.env, MTOOLS_SKIP_CHECK: '1', MTOOLSRC: '/dev/null' }, maxBuffer: 64 * 1024 ** 2 });

afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('ironlens master build --os debian-12: the image', () => {
  it('is _tpl_debian_12.img in the disk dir, sparse, and a new key and URL only re-assembled the disk', () => {
    expect(readdirSync(disks)).toEqual(['_tpl_debian_12.img']);
    expect(built.cached).toBe(true);
    expect(built.sizeBytes).toBe(4 * 1024 ** 3);
    expect(built.allocatedBytes).toBeLessThan(1024 ** 3);
    // "seconds": the copy of the cached tree, mke2fs -d and GRUB (6-20 s here on two busy cores)
    expect(built.seconds).toBeLessThan(120);
    console.log(`[master image] assembled from the cache in ${built.seconds.toFixed(1)} s; ${(built.allocatedBytes / 1024 ** 2).toFixed(0)} MiB allocated of ${built.sizeBytes / 1024 ** 3} GiB`);
  });

  it('has a GPT: root filesystem 1, BIOS boot partition 14, EFI System Partition 15; GRUB in the protective MBR and the BIOS boot partition', () => {
    expect(built.firmware).toBe('both');
    const total = 4 * 1024 * 2048;
    // util-linux's own reading of the table (it checks the headers' and entries' CRC32s)
    const partx = execFileSync('partx', ['--raw', '--noheadings', '--output', 'NR,START,END,TYPE', built.path], { encoding: 'utf8' }).trim().split('\n');
    expect(partx).toEqual([
      `1 135168 ${total - 2048 - 1} 0fc63daf-8483-4772-8e79-3d69d8477de4`,
      '14 2048 4095 21686148-6449-6e6f-744e-656564454649',
      '15 4096 135167 c12a7328-f81f-11d2-ba4b-00a0c93ec93b',
    ]);
    expect(readGpt(built.path)?.problems).toEqual([]);
    const mbr = readMbr(built.path);
    expect(mbr.signature).toBe(true);
    expect(mbr.partitions).toEqual([{ index: 1, active: false, type: 0xee, startSector: 1, sectors: total - 1 }]);
    // GRUB's boot.img, its kernel sector (0x5c) pointing at the BIOS boot partition
    const bootImg = readFileSync('/usr/lib/grub/i386-pc/boot.img');
    expect(mbr.bootCode.subarray(0, 0x5c).equals(bootImg.subarray(0, 0x5c)), "the MBR's code is GRUB's boot.img").toBe(true);
    expect(mbr.bootCode.subarray(0x64, 440).equals(bootImg.subarray(0x64, 440))).toBe(true);
    expect(mbr.bootCode.readBigUInt64LE(0x5c)).toBe(2048n);
    // core.img at the BIOS boot partition's start: diskboot.img, whose block list (the last 12
    // bytes of its sector) names the sectors that follow it.
    const core = readSectors(built.path, 2048, 100);
    const diskboot = readFileSync('/usr/lib/grub/i386-pc/diskboot.img');
    expect(core.subarray(0, 400).equals(diskboot.subarray(0, 400))).toBe(true);
    expect(core.readBigUInt64LE(500)).toBe(2049n);
    expect(core.readUInt16LE(508)).toBeGreaterThan(10);
    expect(core.subarray(512, 512 * (1 + core.readUInt16LE(508))).some((b) => b !== 0)).toBe(true);
  });

  it("has an ESP with Debian's signed shim as \\EFI\\BOOT\\BOOTX64.EFI and under \\EFI\\debian\\, beside GRUB and MokManager, and nothing else", async () => {
    const listing = mtools('mdir', '-/', '-b', '::').toString().trim().split('\n').map((l) => l.trim()).sort();
    expect(listing).toEqual(
      ['::/EFI/', '::/EFI/BOOT/', '::/EFI/BOOT/BOOTX64.EFI', '::/EFI/BOOT/grub.cfg', '::/EFI/BOOT/grubx64.efi', '::/EFI/BOOT/mmx64.efi', '::/EFI/debian/', '::/EFI/debian/grub.cfg', '::/EFI/debian/grubx64.efi', '::/EFI/debian/mmx64.efi', '::/EFI/debian/shimx64.efi'].sort(),
    );
    const file = (p: string) => mtools('mtype', p);
    const shim = file('::/EFI/BOOT/BOOTX64.EFI');
    expect(shim.equals(file('::/EFI/debian/shimx64.efi'))).toBe(true);
    expect(file('::/EFI/BOOT/grubx64.efi').equals(file('::/EFI/debian/grubx64.efi'))).toBe(true);
    // Signed for Secure Boot: shim by Microsoft's third-party UEFI CA, GRUB and MokManager by Debian's.
    const signer = (b: Buffer) => peSignature(b)?.signature?.toString('latin1') ?? '';
    expect(peSignature(shim)?.machine).toBe(0x8664);
    expect(signer(shim)).toContain('Microsoft Corporation UEFI CA 2011');
    expect(signer(file('::/EFI/BOOT/grubx64.efi'))).toContain('Debian Secure Boot Signer');
    expect(signer(file('::/EFI/BOOT/mmx64.efi'))).toContain('Debian Secure Boot Signer');
    // The same bytes as the packages' files (the root filesystem's cache keeps them beside the tree).
    const plan = planMasterBuild({ os: 'debian-12', diskDir: disks });
    expect(shim.equals(readFileSync(join(plan.rootfsDir, 'efi', 'shimx64.efi')))).toBe(true);
    expect(readFileSync(join(plan.rootfsDir, 'efi', 'packages.txt'), 'utf8')).toMatch(/^grub-efi-amd64-signed_.*\.deb\nshim-helpers-amd64-signed_.*\.deb\nshim-signed_.*\.deb\n$/);
    // GRUB finds the root filesystem by its UUID and reads the grub.cfg the BIOS GRUB reads.
    const uuid = execFileSync('/bin/sh', ['-c', 'PATH=$PATH:/usr/sbin:/sbin dumpe2fs -h "$1" 2>/dev/null | sed -n "s/^Filesystem UUID: *//p"', 'sh', `${built.path}?offset=${rootStart * 512}`], { encoding: 'utf8' }).trim();
    const cfg = `search.fs_uuid ${uuid} root\nset prefix=($root)/boot/grub\nconfigfile $prefix/grub.cfg\n`;
    expect(file('::/EFI/debian/grub.cfg').toString()).toBe(cfg);
    expect(file('::/EFI/BOOT/grub.cfg').toString()).toBe(cfg);
    // No key of any kind on the ESP: no SSH host key, no private key.
    for (const f of listing.filter((l) => !l.endsWith('/'))) expect(file(f).toString('latin1'), f).not.toMatch(/PRIVATE KEY|ssh-ed25519|ecdsa-sha2/);
  });

  it('boots the kernel with root=UUID of its own filesystem, from the serial console, with no wait', async () => {
    const cfg = (await fs.cat('/boot/grub/grub.cfg')).toString();
    const uuid = execFileSync('/bin/sh', ['-c', 'PATH=$PATH:/usr/sbin:/sbin dumpe2fs -h "$1" 2>/dev/null | sed -n "s/^Filesystem UUID: *//p"', 'sh', `${built.path}?offset=${rootStart * 512}`], { encoding: 'utf8' }).trim();
    expect(uuid).toMatch(/^[0-9a-f-]{36}$/);
    expect(cfg).toContain('set timeout=0');
    // Under UEFI GRUB writes to the firmware's console (carried to the serial port); under BIOS it drives the port itself.
    expect(cfg).toMatch(/if \[ "\$grub_platform" = "efi" \]; then\n {2}terminal_input console\n {2}terminal_output console\nelse\n {2}serial --unit=0 --speed=115200\n/);
    expect(cfg).toContain(`linux /vmlinuz root=UUID=${uuid} ro`);
    expect(cfg).toContain('console=ttyS0,115200n8');
    expect((await fs.cat('/etc/fstab')).toString()).toBe(`UUID=${uuid} / ext4 errors=remount-ro,noatime 0 0\n`);
    expect(await fs.ls('/boot/grub/i386-pc')).toEqual(expect.arrayContaining(['ext2.mod', 'linux.mod', 'normal.mod', 'serial.mod']));
  });

  it('has a kernel and an initramfs that logs into the iSCSI root with what the iBFT holds', async () => {
    const kernel = await fs.readlink('/vmlinuz');
    const initrd = await fs.readlink('/initrd.img');
    expect(kernel).toMatch(/^boot\/vmlinuz-6\.1\.\d+-\d+-amd64$/);
    expect(initrd).toMatch(/^boot\/initrd\.img-6\.1\.\d+-\d+-amd64$/);
    expect((await fs.stat(`/${kernel}`))!.size).toBeGreaterThan(4 * 1024 ** 2);
    const raw = await fs.cat(`/${initrd}`);
    const early = cpioNames(raw);
    const rest = raw.subarray(early.end);
    expect(rest.readUInt32LE(0), 'zstd-compressed initramfs').toBe(0xfd2fb528);
    const names = cpioNames(execFileSync('zstd', ['-dc'], { input: rest, maxBuffer: 256 * 1024 ** 2 })).names;
    expect(names).toEqual(expect.arrayContaining(['scripts/local-top/iscsi', 'etc/iscsi.initramfs', 'usr/sbin/iscsistart']));
    expect(names.some((n) => /kernel\/drivers\/firmware\/iscsi_ibft\.ko/.test(n)), 'iscsi_ibft.ko').toBe(true);
    expect(names.some((n) => /iscsi_tcp\.ko/.test(n)), 'iscsi_tcp.ko').toBe(true);
    expect(names.some((n) => /virtio_net\.ko/.test(n)), 'virtio_net.ko').toBe(true);
    expect((await fs.cat('/etc/iscsi/iscsi.initramfs')).toString()).toBe('ISCSI_AUTO=true\n');
    console.log(`[master image] ${kernel}, ${initrd} (${(raw.length / 1024 ** 2).toFixed(1)} MiB, ${names.length} files, iSCSI hook and iscsi_ibft inside)`);
  });

  it('holds no SSH host key and no machine-id, and makes them at first boot', async () => {
    expect((await fs.ls('/etc/ssh')).filter((n) => n.startsWith('ssh_host_'))).toEqual([]);
    expect((await fs.stat('/etc/machine-id'))!.size).toBe(0);
    expect((await fs.cat('/etc/systemd/system/ssh-hostkeys.service')).toString()).toContain('ssh-keygen -q -t ed25519');
    expect(await fs.readlink('/etc/systemd/system/ssh.service.wants/ssh-hostkeys.service')).toBe('/etc/systemd/system/ssh-hostkeys.service');
    expect(await fs.ls('/usr/sbin')).toEqual(expect.arrayContaining(['sshd', 'iscsid']));
    expect(await fs.ls('/usr/bin')).toEqual(expect.arrayContaining(['sudo']));
  });

  it("lets root in with the authorized key given, and nothing else", async () => {
    expect((await fs.cat('/root/.ssh/authorized_keys')).toString()).toBe(`${KEY}\n`);
    expect(await fs.stat('/root/.ssh/authorized_keys')).toMatchObject({ type: 'regular', mode: 0o600, uid: 0 });
    expect(await fs.stat('/root/.ssh')).toMatchObject({ type: 'directory', mode: 0o700 });
  });

  it('carries the host reporter as its install.txt says, enabled, with the control-plane URL given', async () => {
    const plan = planMasterBuild({ os: 'debian-12', diskDir: disks });
    if (!plan.reporter) throw new Error(`no host reporter at ${join('packages', 'metal', 'assets', 'host-reporter', 'install.txt')}`);
    for (const f of plan.reporter.files) {
      expect(await fs.stat(f.target), f.target).toMatchObject({ type: 'regular', mode: f.mode });
      expect((await fs.cat(f.target)).equals(readFileSync(join(plan.reporter.dir, f.source))), f.target).toBe(true);
    }
    for (const unit of plan.reporter.enable) {
      const wanted = (await fs.cat(`/etc/systemd/system/${unit}`)).toString().match(/^WantedBy=(\S+)/m)?.[1];
      expect(await fs.readlink(`/etc/systemd/system/${wanted}.wants/${unit}`), unit).toBe(`/etc/systemd/system/${unit}`);
    }
    for (const p of plan.reporter.packages) expect(plan.inputs.packages).toContain(p);
    expect((await fs.cat('/etc/ironlens/host-reporter.conf')).toString()).toBe(`CONTROL_PLANE=${CP}\n`);
  });

  it('carries its identity for the host reporter: the master file name and a build hash no other build shares (issue 31)', async () => {
    expect(built.build).toMatch(/^[0-9a-f]{16}$/);
    expect((await fs.cat('/etc/ironlens-master')).toString()).toBe(
      `# ironlens master image identity, written by \`ironlens master build\` (the host reporter sends it)\nmaster=_tpl_debian_12.img\nbuild=${built.build}\n`,
    );
    expect(await fs.stat('/etc/ironlens-master')).toMatchObject({ type: 'regular', mode: 0o644, uid: 0 });
  });

  it('leaves nothing under _tpl_ (and no half file) when the build fails', async () => {
    const dir = join(work, 'failed');
    execFileSync('mkdir', ['-p', join(dir, 'disks')]);
    const lines: string[] = [];
    // A mirror nobody answers on (loopback, closed port): mmdebstrap's apt-get update fails.
    const failing = buildMaster({ os: 'debian-12', diskDir: join(dir, 'disks'), cacheDir: join(dir, 'cache'), mirror: 'http://127.0.0.1:9/debian', securityMirror: 'http://127.0.0.1:9/debian-security', log: (l) => lines.push(l) });
    await expect(failing).rejects.toThrow(MasterBuildError);
    await expect(failing).rejects.toThrow(/mmdebstrap failed/);
    expect(readdirSync(join(dir, 'disks'))).toEqual([]);
    expect(readdirSync(join(dir, 'cache', 'rootfs'))).toEqual([]);
    expect(lines.some((l) => l.includes('127.0.0.1:9'))).toBe(true);
  }, 180_000);
});
