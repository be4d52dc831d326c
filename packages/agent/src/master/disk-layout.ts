import { randomUUID } from 'node:crypto';
import { closeSync, openSync, writeSync } from 'node:fs';
import { crc32 } from 'node:zlib';

/**
 * Where a master image's partitions lie, and the sectors that describe them: an MBR for a
 * BIOS-only image (what masters were before UEFI), a GPT for one that boots under UEFI (and,
 * with a BIOS boot partition and GRUB's boot.img in the protective MBR, under BIOS too).
 *
 * The GPT layout follows the cloud images' convention: the root filesystem is partition 1
 * (`/dev/sda1`, as in the MBR layout), placed after the small ones; the BIOS boot partition is
 * 14 and the EFI System Partition 15. Everything is written from Node, without a partitioning
 * tool, a loop device or a mount.
 */

/** Which firmware an image boots under: `both` (default), `uefi` or `bios`. */
export type Firmware = 'bios' | 'uefi' | 'both';
export const FIRMWARES: readonly Firmware[] = ['both', 'uefi', 'bios'];

export const SECTOR = 512;
/** The first partition starts at 1 MiB (sector 2048); GRUB's core.img lives before it in the MBR layout. */
export const FIRST_SECTOR = 2048;
/** BIOS boot partition: 1 MiB, GRUB's core.img (part_gpt, biosdisk, ext2: ~30 KiB). */
export const BIOS_BOOT_SECTORS = 2048;
/** The EFI System Partition: 64 MiB, FAT32 (shim, GRUB and MokManager twice: ~12 MiB). */
export const ESP_SECTORS = 131072;
/** In the GPT layouts the root filesystem starts here (66 MiB), whatever the firmware. */
export const GPT_ROOT_START = FIRST_SECTOR + BIOS_BOOT_SECTORS + ESP_SECTORS;
/** The GPT's partition entry array: 128 entries of 128 bytes (32 sectors). */
const GPT_ENTRIES = 128;
const GPT_ENTRY_SIZE = 128;
const GPT_ENTRY_SECTORS = (GPT_ENTRIES * GPT_ENTRY_SIZE) / SECTOR;

export const GPT_TYPES = {
  linux: '0fc63daf-8483-4772-8e79-3d69d8477de4',
  esp: 'c12a7328-f81f-11d2-ba4b-00a0c93ec93b',
  biosBoot: '21686148-6449-6e6f-744e-656564454649',
} as const;

export interface PartitionPlan {
  /** Partition number (`/dev/sdaN`, GRUB's `gptN`/`msdosN`). */
  number: number;
  role: 'root' | 'esp' | 'bios-boot';
  start: number;
  sectors: number;
  name: string;
}

export interface DiskLayout {
  firmware: Firmware;
  table: 'mbr' | 'gpt';
  totalSectors: number;
  partitions: PartitionPlan[];
  root: PartitionPlan;
  esp?: PartitionPlan;
  biosBoot?: PartitionPlan;
}

/**
 * The partitions of an image of `sizeBytes` (whole MiB, at least 1 GiB: checked by the caller).
 * `bios`: an MBR, the root filesystem from 1 MiB to the end (GRUB's core.img in the gap).
 * `uefi`/`both`: a GPT; the ESP at 2 MiB; `both` adds the BIOS boot partition at 1 MiB; the root
 * filesystem from 66 MiB to 1 MiB before the end (the backup GPT lives in that last MiB).
 */
export function planLayout(firmware: Firmware, sizeBytes: number): DiskLayout {
  const totalSectors = sizeBytes / SECTOR;
  if (firmware === 'bios') {
    const root: PartitionPlan = { number: 1, role: 'root', start: FIRST_SECTOR, sectors: totalSectors - FIRST_SECTOR, name: 'root' };
    return { firmware, table: 'mbr', totalSectors, partitions: [root], root };
  }
  const root: PartitionPlan = { number: 1, role: 'root', start: GPT_ROOT_START, sectors: totalSectors - GPT_ROOT_START - FIRST_SECTOR, name: 'root' };
  const esp: PartitionPlan = { number: 15, role: 'esp', start: FIRST_SECTOR + BIOS_BOOT_SECTORS, sectors: ESP_SECTORS, name: 'EFI System' };
  const biosBoot: PartitionPlan | undefined = firmware === 'both' ? { number: 14, role: 'bios-boot', start: FIRST_SECTOR, sectors: BIOS_BOOT_SECTORS, name: 'BIOS boot' } : undefined;
  return { firmware, table: 'gpt', totalSectors, partitions: [root, ...(biosBoot ? [biosBoot] : []), esp], root, esp, biosBoot };
}

/** A GUID in the GPT's byte order (the first three fields little-endian). */
export function guidBytes(guid: string): Buffer {
  const hex = guid.replace(/-/g, '');
  if (!/^[0-9a-fA-F]{32}$/.test(hex)) throw new Error(`not a GUID: ${guid}`);
  const b = Buffer.from(hex, 'hex');
  return Buffer.concat([Buffer.from(b.subarray(0, 4)).reverse(), Buffer.from(b.subarray(4, 6)).reverse(), Buffer.from(b.subarray(6, 8)).reverse(), b.subarray(8)]);
}

/** The inverse of {@link guidBytes}: lower-case, dashed. */
export function guidString(b: Buffer): string {
  const h = Buffer.concat([Buffer.from(b.subarray(0, 4)).reverse(), Buffer.from(b.subarray(4, 6)).reverse(), Buffer.from(b.subarray(6, 8)).reverse(), b.subarray(8, 16)]).toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

const TYPE_OF: Record<PartitionPlan['role'], string> = { root: GPT_TYPES.linux, esp: GPT_TYPES.esp, 'bios-boot': GPT_TYPES.biosBoot };

/** The partition entry array (128 entries; unused ones zero). */
function gptEntries(layout: DiskLayout, guids: Map<number, string>): Buffer {
  const entries = Buffer.alloc(GPT_ENTRIES * GPT_ENTRY_SIZE);
  for (const p of layout.partitions) {
    const e = (p.number - 1) * GPT_ENTRY_SIZE;
    guidBytes(TYPE_OF[p.role]).copy(entries, e);
    guidBytes(guids.get(p.number) ?? randomUUID()).copy(entries, e + 16);
    entries.writeBigUInt64LE(BigInt(p.start), e + 32);
    entries.writeBigUInt64LE(BigInt(p.start + p.sectors - 1), e + 40);
    entries.writeBigUInt64LE(0n, e + 48);
    entries.write(p.name, e + 56, 72, 'utf16le');
  }
  return entries;
}

function gptHeader(layout: DiskLayout, diskGuid: string, entriesCrc: number, primary: boolean): Buffer {
  const last = layout.totalSectors - 1;
  const h = Buffer.alloc(SECTOR);
  h.write('EFI PART', 0, 'latin1');
  h.writeUInt32LE(0x00010000, 8);
  h.writeUInt32LE(92, 12);
  h.writeBigUInt64LE(BigInt(primary ? 1 : last), 24);
  h.writeBigUInt64LE(BigInt(primary ? last : 1), 32);
  h.writeBigUInt64LE(BigInt(2 + GPT_ENTRY_SECTORS), 40);
  h.writeBigUInt64LE(BigInt(last - 1 - GPT_ENTRY_SECTORS), 48);
  guidBytes(diskGuid).copy(h, 56);
  h.writeBigUInt64LE(BigInt(primary ? 2 : last - GPT_ENTRY_SECTORS), 72);
  h.writeUInt32LE(GPT_ENTRIES, 80);
  h.writeUInt32LE(GPT_ENTRY_SIZE, 84);
  h.writeUInt32LE(entriesCrc, 88);
  h.writeUInt32LE(crc32(h.subarray(0, 92)), 16);
  return h;
}

export interface BootSectors {
  /** GRUB's boot.img (512 bytes): its first 440 bytes become the MBR's code. Absent: no BIOS boot code. */
  bootImg?: Buffer;
  /** GRUB's core.img: at LBA 1 (MBR layout) or in the BIOS boot partition (GPT). */
  coreImg?: Buffer;
  /** GPT only: the disk's GUID and each partition's (by number); random when not given. */
  diskGuid?: string;
  partitionGuids?: Map<number, string>;
}

/** GRUB's boot.img fields grub-bios-setup fills in: the LBA it loads core.img's first sector from. */
const BOOT_IMG_KERNEL_SECTOR = 0x5c;
/** diskboot.img's block list (the end of core.img's first sector): the LBA of core.img's second sector. */
const CORE_BLOCKLIST_START = 0x1f4;

/**
 * Writes the sectors that describe the disk (and GRUB's BIOS stages) into `file`:
 * - MBR layout: GRUB's boot.img code, one active type-0x83 partition (LBA addressing, CHS fields
 *   `fe ff ff`), core.img at LBA 1 (boot.img's default, so nothing in either is patched);
 * - GPT layout: a protective MBR (one type-0xEE entry over the disk) carrying boot.img's code when
 *   the image boots under BIOS, the primary GPT at LBA 1-33, the backup at the end, and core.img
 *   in the BIOS boot partition, with boot.img's kernel sector and core.img's block list pointing
 *   there (what grub-bios-setup does).
 */
export function writePartitionTable(file: string, layout: DiskLayout, boot: BootSectors = {}): void {
  const writes: Array<{ at: number; data: Buffer }> = [];
  const mbr = Buffer.alloc(SECTOR);
  const bootsBios = layout.firmware !== 'uefi';
  if (bootsBios) {
    if (!boot.bootImg || boot.bootImg.length !== SECTOR) throw new Error(`GRUB boot.img is ${boot.bootImg?.length ?? 0} bytes, not 512`);
    if (!boot.coreImg) throw new Error('GRUB core.img missing');
    boot.bootImg.copy(mbr, 0, 0, 440);
  }
  mbr.writeUInt32LE(0x1d15c0de, 440);
  const e = 446;
  if (layout.table === 'mbr') {
    const core = boot.coreImg as Buffer;
    if (core.length > (layout.root.start - 1) * SECTOR) throw new Error('GRUB core.img does not fit before the partition');
    mbr[e] = 0x80;
    mbr.set([0xfe, 0xff, 0xff], e + 1);
    mbr[e + 4] = 0x83;
    mbr.set([0xfe, 0xff, 0xff], e + 5);
    mbr.writeUInt32LE(layout.root.start, e + 8);
    mbr.writeUInt32LE(layout.root.sectors, e + 12);
    writes.push({ at: SECTOR, data: core });
  } else {
    // The protective MBR: not active (the UEFI specification asks for 0x00), type 0xEE from LBA 1.
    mbr.set([0x00, 0x00, 0x02, 0x00, 0xee, 0xff, 0xff, 0xff], e);
    mbr.writeUInt32LE(1, e + 8);
    mbr.writeUInt32LE(Math.min(layout.totalSectors - 1, 0xffffffff), e + 12);
    if (bootsBios) {
      const bb = layout.biosBoot;
      const core = Buffer.from(boot.coreImg as Buffer);
      if (!bb) throw new Error('a GPT image that boots under BIOS needs a BIOS boot partition');
      if (core.length > bb.sectors * SECTOR) throw new Error('GRUB core.img does not fit in the BIOS boot partition');
      mbr.writeBigUInt64LE(BigInt(bb.start), BOOT_IMG_KERNEL_SECTOR);
      core.writeBigUInt64LE(BigInt(bb.start + 1), CORE_BLOCKLIST_START);
      writes.push({ at: bb.start * SECTOR, data: core });
    }
    const guids = boot.partitionGuids ?? new Map<number, string>();
    const entries = gptEntries(layout, guids);
    const entriesCrc = crc32(entries);
    const diskGuid = boot.diskGuid ?? randomUUID();
    const last = layout.totalSectors - 1;
    writes.push({ at: SECTOR, data: gptHeader(layout, diskGuid, entriesCrc, true) });
    writes.push({ at: 2 * SECTOR, data: entries });
    writes.push({ at: (last - GPT_ENTRY_SECTORS) * SECTOR, data: entries });
    writes.push({ at: last * SECTOR, data: gptHeader(layout, diskGuid, entriesCrc, false) });
  }
  mbr[510] = 0x55;
  mbr[511] = 0xaa;
  writes.unshift({ at: 0, data: mbr });
  const fd = openSync(file, 'r+');
  try {
    for (const w of writes) writeSync(fd, w.data, 0, w.data.length, w.at);
  } finally {
    closeSync(fd);
  }
}
