/**
 * The master image `ironlens master build --os debian-12` makes, read without mounting it
 * (docs/master-images.md): the partition table and GRUB in the first sectors, the kernel and
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
import { Ext4Reader, cpioNames, readMbr, readSectors } from './image-inspect';
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
  const mbr = readMbr(built.path);
  fs = new Ext4Reader(built.path, mbr.partitions[0].startSector * 512);
}, 300_000);

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

  it('has an MBR with one active Linux partition at 1 MiB and GRUB in the boot sector and the gap after it', () => {
    const mbr = readMbr(built.path);
    expect(mbr.signature).toBe(true);
    expect(mbr.partitions).toEqual([{ index: 1, active: true, type: 0x83, startSector: 2048, sectors: 4 * 1024 * 2048 - 2048 }]);
    const bootImg = readFileSync('/usr/lib/grub/i386-pc/boot.img');
    expect(mbr.bootCode.equals(bootImg.subarray(0, 440)), "the MBR's code is GRUB's boot.img").toBe(true);
    // core.img at LBA 1 (boot.img's default): GRUB's diskboot.img begins it; its blocklist
    // (the last 12 bytes of sector 1) names the sectors that follow.
    const core = readSectors(built.path, 1, 100);
    const diskboot = readFileSync('/usr/lib/grub/i386-pc/diskboot.img');
    expect(core.subarray(0, 400).equals(diskboot.subarray(0, 400))).toBe(true);
    expect(core.readUInt32LE(500)).toBe(2); // blocklist start sector (low half of the 64-bit LBA)
    expect(core.readUInt16LE(508)).toBeGreaterThan(10); // sectors of core.img after diskboot
    // The rest of core.img (its kernel and modules, LZMA-compressed) lies before the partition.
    expect(core.subarray(512, 512 * (1 + core.readUInt16LE(508))).some((b) => b !== 0)).toBe(true);
  });

  it('boots the kernel with root=UUID of its own filesystem, from the serial console, with no wait', async () => {
    const cfg = (await fs.cat('/boot/grub/grub.cfg')).toString();
    const uuid = execFileSync('/bin/sh', ['-c', 'PATH=$PATH:/usr/sbin:/sbin dumpe2fs -h "$1" 2>/dev/null | sed -n "s/^Filesystem UUID: *//p"', 'sh', `${built.path}?offset=1048576`], { encoding: 'utf8' }).trim();
    expect(uuid).toMatch(/^[0-9a-f-]{36}$/);
    expect(cfg).toContain('set timeout=0');
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
