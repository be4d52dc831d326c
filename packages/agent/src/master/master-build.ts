import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync, chmodSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Exec, exec as realExec, execStreaming, processAlive } from '@ironlens/core';
import { FILE_NAME_MAX_LENGTH, parseSize } from '../domain/names';
import { type DiskLayout, type Firmware, FIRMWARES, planLayout, SECTOR, writePartitionTable } from './disk-layout';
import { peSignature } from './image-inspect';
import { type OsRecipe, OS_RECIPES, osRecipe, recipeHooks } from './os-recipes';

export { type Firmware, FIRMWARES } from './disk-layout';

/**
 * `ironlens master build`: a master image (`_tpl_<name>.img` in the agent's DISK_DIR) that boots
 * diskless through iPXE `sanboot`, its root on the iSCSI disk (docs/master-images.md).
 *
 * Two stages, so a new key or control-plane URL is no rebuild:
 *  1. the root filesystem, from the distribution's packages (mmdebstrap), cached under
 *     `~/.cache/ironlens/master/rootfs/<os>-<key>/` by a key over every input it depends on
 *     (recipe, hooks, package list, mirrors); the .debs are kept in `debs/` across keys;
 *  2. the disk, assembled from a copy of that tree every time: the authorized keys, the host
 *     reporter, its control-plane URL, fstab and GRUB with a fresh filesystem UUID; the partition
 *     table (`disk-layout.ts`: an MBR for `--firmware bios`, else a GPT), one ext4 partition
 *     filled by `mke2fs -d` at an offset (no mount, no loop device), for UEFI an EFI System
 *     Partition made and filled with mtools (the distribution's signed shim and GRUB, downloaded
 *     with the root filesystem), for BIOS GRUB's boot.img and core.img. Written under a temporary
 *     name in DISK_DIR, renamed at the end.
 */

export interface MasterBuildOptions {
  os: string;
  diskDir: string;
  name?: string;
  /** Disk size (`4G`): bytes or a number with K, M, G, T. Default 4G. */
  size?: string | number;
  /** Each a public key line or a file of them. */
  authorizedKeys?: string[];
  controlPlane?: string;
  packages?: string[];
  /** Which firmware the image boots under. Default is `both` (GPT, ESP and a BIOS boot partition). */
  firmware?: Firmware | string;
  /** The distribution's archive and its security archive; default: this host's apt sources. */
  mirror?: string;
  securityMirror?: string;
  /** Default `~/.cache/ironlens/master`. */
  cacheDir?: string;
  /** The host reporter's directory (its install.txt); default packages/metal/assets/host-reporter. */
  reporterDir?: string;
  /** Progress lines (the command writes them to stderr). */
  log?: (line: string) => void;
  signal?: AbortSignal;
  exec?: Exec;
}

export interface MasterBuildResult {
  path: string;
  name: string;
  os: string;
  /** The root filesystem's cache key. */
  key: string;
  /** The root filesystem came from the cache. */
  cached: boolean;
  rootfsSeconds: number;
  assembleSeconds: number;
  seconds: number;
  sizeBytes: number;
  allocatedBytes: number;
  packages: string[];
  firmware: Firmware;
  /** The partition table and its partitions (sectors of 512 bytes). */
  table: DiskLayout['table'];
  partitions: Array<{ number: number; role: string; start: number; sectors: number }>;
  /** This build's identity, written with the master's file name into the image's `/etc/ironlens-master` (issue 31). */
  build: string;
}

export class MasterBuildError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MasterBuildError';
  }
}

const HERE = dirname(fileURLToPath(import.meta.url));
export const DEFAULT_REPORTER_DIR = join(HERE, '..', '..', '..', 'metal', 'assets', 'host-reporter');
export const DEFAULT_MASTER_CACHE = join(homedir(), '.cache', 'ironlens', 'master');
export const DEFAULT_MASTER_SIZE = '4G';
const GRUB_DIR = '/usr/lib/grub/i386-pc';

/** Bump when what the builder does to the root filesystem changes (outside the hooks). */
const ROOTFS_FORMAT = 1;

const NAME_RE = /^[a-z0-9][a-z0-9_.-]{0,63}$/;
const PACKAGE_RE = /^[a-z0-9][a-z0-9+.-]{1,99}$/;
const KEY_RE = /^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)|sk-ssh-ed25519@openssh\.com|sk-ecdsa-sha2-nistp256@openssh\.com) [A-Za-z0-9+/]{16,16384}={0,3}( [\x21-\x7e][\x20-\x7e]{0,199})?$/;
const MIRROR_RE = /^(https?|file):\/\/[A-Za-z0-9._~:/@%+-]{1,500}$/;
const CONTROL_PLANE_RE = /^https?:\/\/(\[[0-9a-fA-F:.]{2,45}\]|[A-Za-z0-9.-]{1,253})(:\d{1,5})?\/?$/;

export function checkMasterName(name: string): string {
  if (!NAME_RE.test(name) || `_tpl_${name}.img`.length > FILE_NAME_MAX_LENGTH) {
    throw new MasterBuildError(`invalid master name ${JSON.stringify(name)}: 1-64 of a-z, 0-9, '_', '.', '-', starting with a letter or digit`);
  }
  return name;
}

export function checkPackageName(p: string): string {
  if (!PACKAGE_RE.test(p)) throw new MasterBuildError(`invalid Debian package name ${JSON.stringify(p)}`);
  return p;
}

export function checkControlPlane(url: string): string {
  const m = CONTROL_PLANE_RE.exec(url);
  const port = m?.[2] ? Number(m[2].slice(1)) : 80;
  if (!m || port < 1 || port > 65535) throw new MasterBuildError(`invalid control-plane URL ${JSON.stringify(url)}: expected http(s)://host[:port]`);
  return url.replace(/\/$/, '');
}

export function checkFirmware(value: string): Firmware {
  if (!(FIRMWARES as readonly string[]).includes(value)) throw new MasterBuildError(`invalid --firmware ${JSON.stringify(value)}: one of ${FIRMWARES.join(', ')}`);
  return value as Firmware;
}

export function checkMirror(url: string): string {
  if (!MIRROR_RE.test(url)) throw new MasterBuildError(`invalid mirror URL ${JSON.stringify(url)}`);
  return url.replace(/\/$/, '');
}

/** One argument of --authorized-key: a key line, or a file holding key lines (comments and blank lines skipped). */
export function readAuthorizedKeys(args: string[]): string[] {
  const keys: string[] = [];
  for (const arg of args) {
    const text = KEY_RE.test(arg.trim()) ? arg.trim() : readKeyFile(arg);
    for (const raw of text.split('\n')) {
      const line = raw.trim();
      if (!line || line.startsWith('#')) continue;
      if (!KEY_RE.test(line)) throw new MasterBuildError(`not an SSH public key in ${JSON.stringify(arg.length > 80 ? `${arg.slice(0, 80)}…` : arg)}: ${JSON.stringify(line.slice(0, 40))}…`);
      if (!keys.includes(line)) keys.push(line);
    }
  }
  return keys;
}

function readKeyFile(path: string): string {
  if (!existsSync(path)) throw new MasterBuildError(`--authorized-key ${JSON.stringify(path.slice(0, 80))}: neither an SSH public key nor a file`);
  if (statSync(path).size > 1024 * 1024) throw new MasterBuildError(`--authorized-key ${path}: larger than 1 MiB`);
  return readFileSync(path, 'utf8');
}

/** The Debian archive and security archive in this host's apt sources (deb822 `.sources` or one-line `.list`). */
export function hostAptMirrors(root = '/etc/apt'): { main?: string; security?: string } {
  const uris: Array<{ uri: string; suites: string[] }> = [];
  const files: string[] = [];
  if (existsSync(join(root, 'sources.list'))) files.push(join(root, 'sources.list'));
  const d = join(root, 'sources.list.d');
  if (existsSync(d)) for (const f of readdirSync(d).sort()) if (f.endsWith('.sources') || f.endsWith('.list')) files.push(join(d, f));
  for (const f of files) {
    const text = readFileSync(f, 'utf8');
    if (f.endsWith('.sources')) {
      for (const stanza of text.split(/\n\s*\n/)) {
        const field = (n: string) => new RegExp(`^${n}:\\s*(.+)$`, 'mi').exec(stanza)?.[1].trim().split(/\s+/) ?? [];
        if (/^Enabled:\s*no/im.test(stanza) || !field('Types').includes('deb')) continue;
        for (const uri of field('URIs')) uris.push({ uri, suites: field('Suites') });
      }
    } else {
      for (const line of text.split('\n')) {
        const m = /^\s*deb\s+(\[[^\]]*\]\s+)?(\S+)\s+(\S+)/.exec(line);
        if (m) uris.push({ uri: m[2], suites: [m[3]] });
      }
    }
  }
  const security = uris.find((u) => u.suites.some((s) => s.endsWith('-security')))?.uri;
  const main = uris.find((u) => u.suites.some((s) => /^[a-z]+(-updates)?$/.test(s)) && /debian/.test(u.uri))?.uri;
  return { main, security };
}

/** The reporter's install.txt: files, directories and units to enable (its own README says the format). */
export interface ReporterInstall {
  dir: string;
  files: Array<{ source: string; target: string; mode: number }>;
  mkdirs: Array<{ path: string; mode: number }>;
  enable: string[];
  packages: string[];
}

const IMAGE_PATH_RE = /^\/[A-Za-z0-9._/+-]{1,250}$/;
const UNIT_RE = /^[A-Za-z0-9@._-]{1,100}\.(service|timer|path|socket|target)$/;

/**
 * The reporter's install.txt, or a refusal when it is missing (issue 29, finding 12): a master
 * without the reporter boots fine and never reports its address and host keys, so a bootstrap of
 * its workers would fail much later, far from the cause.
 */
export function readReporterInstall(dir: string): ReporterInstall {
  const spec = join(dir, 'install.txt');
  if (!existsSync(spec)) throw new MasterBuildError(`the host reporter's files are missing (${spec}): a master built without them would never report its address and host keys; reinstall ironlens (its package carries them)`);
  const out: ReporterInstall = { dir, files: [], mkdirs: [], enable: [], packages: [] };
  const checkPath = (p: string) => {
    if (!IMAGE_PATH_RE.test(p) || p.split('/').includes('..')) throw new MasterBuildError(`${spec}: bad path in the image ${JSON.stringify(p)}`);
    return p;
  };
  const checkMode = (m: string) => {
    if (!/^0?[0-7]{3}$/.test(m)) throw new MasterBuildError(`${spec}: bad mode ${JSON.stringify(m)}`);
    return Number.parseInt(m, 8);
  };
  for (const raw of readFileSync(spec, 'utf8').split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const [verb, ...args] = line.split(/\s+/);
    if (verb === 'file' && args.length === 3) {
      if (!/^[A-Za-z0-9._-]+$/.test(args[0]) || !existsSync(join(dir, args[0]))) throw new MasterBuildError(`${spec}: no file ${JSON.stringify(args[0])} in ${dir}`);
      out.files.push({ source: args[0], target: checkPath(args[1]), mode: checkMode(args[2]) });
    } else if (verb === 'mkdir' && args.length === 2) out.mkdirs.push({ path: checkPath(args[0]), mode: checkMode(args[1]) });
    else if (verb === 'enable' && args.length === 1 && UNIT_RE.test(args[0])) out.enable.push(args[0]);
    else throw new MasterBuildError(`${spec}: cannot read line ${JSON.stringify(line)}`);
  }
  const pk = join(dir, 'PACKAGES');
  if (existsSync(pk)) {
    for (const raw of readFileSync(pk, 'utf8').split('\n')) {
      const p = raw.replace(/#.*/, '').trim();
      if (p) out.packages.push(checkPackageName(p));
    }
  }
  return out;
}

export interface RootfsInputs {
  format: number;
  os: string;
  suite: string;
  variant: string;
  sources: string[];
  packages: string[];
  dpkgOptions: string[];
  hooks: { essential: string; customize: string };
  /**
   * The firmware choice, as what it adds to the root filesystem: the UEFI boot loaders' packages
   * (downloaded beside the tree). Absent for `--firmware bios`, so a BIOS master keeps the key it
   * had before UEFI; `uefi` and `both` share one root filesystem.
   */
  efi?: { vendor: string; packages: string[]; files: Array<{ from: string; name: string }> };
}

/** Every input of the root filesystem, in a fixed order: its hash is the cache key. */
export function rootfsInputs(recipe: OsRecipe, extraPackages: string[], mirrors: { main: string; security: string }, firmware: Firmware = 'both'): RootfsInputs {
  const packages = [...new Set([...recipe.packages, ...extraPackages])].sort();
  const efi = firmware === 'bios' ? undefined : recipe.efi;
  if (firmware !== 'bios' && !efi) throw new MasterBuildError(`${recipe.id} has no UEFI boot loaders: --firmware bios`);
  return {
    format: ROOTFS_FORMAT,
    os: recipe.id,
    suite: recipe.suite,
    variant: recipe.variant,
    sources: recipe.sources.map((s) => `deb ${s.mirror === 'main' ? mirrors.main : mirrors.security} ${s.suite} ${s.components}`),
    packages,
    dpkgOptions: recipe.dpkgOptions,
    hooks: recipeHooks(recipe),
    ...(efi ? { efi: { vendor: efi.vendor, packages: efi.packages.map(checkPackageName), files: efi.files } } : {}),
  };
}

export function rootfsKey(inputs: RootfsInputs): string {
  return createHash('sha256').update(JSON.stringify(inputs)).digest('hex').slice(0, 16);
}

/** What a build would use: validated options, the recipe, the cache key (no side effects). */
export function planMasterBuild(opts: MasterBuildOptions) {
  const recipe = osRecipe(opts.os);
  if (!recipe) throw new MasterBuildError(`unknown --os ${JSON.stringify(opts.os)}: one of ${Object.keys(OS_RECIPES).join(', ')}`);
  const name = checkMasterName(opts.name ?? recipe.defaultName);
  let sizeBytes: number;
  try {
    sizeBytes = parseSize(opts.size ?? DEFAULT_MASTER_SIZE);
  } catch (err) {
    throw new MasterBuildError((err as Error).message);
  }
  if (sizeBytes < 1024 ** 3 || sizeBytes % (1024 * 1024) !== 0) throw new MasterBuildError(`--size ${opts.size}: at least 1G, in whole MiB`);
  const keys = readAuthorizedKeys(opts.authorizedKeys ?? []);
  const controlPlane = opts.controlPlane === undefined ? undefined : checkControlPlane(opts.controlPlane);
  const userPackages = (opts.packages ?? []).map(checkPackageName);
  const firmware = checkFirmware(opts.firmware ?? 'both');
  const reporter = readReporterInstall(opts.reporterDir ?? DEFAULT_REPORTER_DIR);
  const host = hostAptMirrors();
  const main = checkMirror(opts.mirror ?? process.env.IRONLENS_MASTER_MIRROR ?? host.main ?? 'http://deb.debian.org/debian');
  const security = checkMirror(opts.securityMirror ?? process.env.IRONLENS_MASTER_SECURITY_MIRROR ?? host.security ?? `${main}-security`);
  const inputs = rootfsInputs(recipe, [...(reporter?.packages ?? []), ...userPackages], { main, security }, firmware);
  const key = rootfsKey(inputs);
  const diskDir = resolve(opts.diskDir);
  const cacheDir = resolve(opts.cacheDir ?? process.env.IRONLENS_MASTER_CACHE ?? DEFAULT_MASTER_CACHE);
  return {
    recipe,
    name,
    sizeBytes,
    keys,
    controlPlane,
    reporter,
    inputs,
    key,
    diskDir,
    cacheDir,
    firmware,
    layout: planLayout(firmware, sizeBytes),
    rootfsDir: join(cacheDir, 'rootfs', `${recipe.id}-${key}`),
    target: join(diskDir, `_tpl_${name}.img`),
  };
}

export type MasterPlan = ReturnType<typeof planMasterBuild>;

/** Builds (or takes from the cache) the root filesystem, then assembles the disk. */
export async function buildMaster(opts: MasterBuildOptions): Promise<MasterBuildResult> {
  const t0 = Date.now();
  const log = opts.log ?? ((l: string) => process.stderr.write(`${l}\n`));
  const exec = opts.exec ?? realExec;
  const plan = planMasterBuild(opts);
  if (!existsSync(plan.diskDir) || !statSync(plan.diskDir).isDirectory()) throw new MasterBuildError(`--disk-dir ${plan.diskDir}: not a directory`);
  await requireHostTools(exec, plan.firmware);
  if (process.getuid?.() !== 0 && !existsSync(join(plan.rootfsDir, 'done'))) {
    // mmdebstrap's unshare mode (its choice without root) writes a tree owned by sub-uids, and
    // mke2fs -d copies owners as it finds them: the image's files would not belong to root.
    throw new MasterBuildError('building a root filesystem needs root (mmdebstrap root mode: the image must keep its files\' owners); run as root, or assemble from a root filesystem already in the cache');
  }
  log(`[master] ${plan.recipe.pretty} → ${plan.target} (${plan.sizeBytes / 1024 ** 3} GiB, boots under ${plan.firmware === 'both' ? 'UEFI and BIOS' : plan.firmware === 'uefi' ? 'UEFI' : 'BIOS'}); root filesystem key ${plan.key}`);
  removeStaleWork(plan.cacheDir, plan.diskDir);
  const cached = existsSync(join(plan.rootfsDir, 'done'));
  const tr = Date.now();
  if (cached) log(`[master] root filesystem from the cache: ${plan.rootfsDir}`);
  else await buildRootfs(plan, log, opts.signal);
  const rootfsSeconds = (Date.now() - tr) / 1000;
  const ta = Date.now();
  const build = await assembleDisk(plan, exec, log, opts.signal);
  const assembleSeconds = (Date.now() - ta) / 1000;
  const st = statSync(plan.target);
  const result: MasterBuildResult = {
    path: plan.target,
    name: plan.name,
    os: plan.recipe.id,
    key: plan.key,
    cached,
    rootfsSeconds,
    assembleSeconds,
    seconds: (Date.now() - t0) / 1000,
    sizeBytes: st.size,
    allocatedBytes: st.blocks * 512,
    packages: plan.inputs.packages,
    firmware: plan.firmware,
    table: plan.layout.table,
    partitions: plan.layout.partitions.map((p) => ({ number: p.number, role: p.role, start: p.start, sectors: p.sectors })),
    build,
  };
  log(
    `[master] ${plan.target}: ${(st.size / 1024 ** 3).toFixed(1)} GiB apparent, ${(result.allocatedBytes / 1024 ** 2).toFixed(0)} MiB allocated; root filesystem ${cached ? 'cached' : `built in ${rootfsSeconds.toFixed(0)} s`}, disk assembled in ${assembleSeconds.toFixed(1)} s, ${result.seconds.toFixed(1)} s in all`,
  );
  return result;
}

/** What a build killed midway left (its pid is in the name and no longer runs): temporary trees, disks. */
export function removeStaleWork(cacheDir: string, diskDir: string): void {
  const stale = (dir: string, re: RegExp) => {
    if (!existsSync(dir)) return;
    for (const f of readdirSync(dir)) {
      const pid = re.exec(f)?.[1];
      if (pid && Number(pid) !== process.pid && !processAlive(Number(pid))) rmSync(join(dir, f), { recursive: true, force: true });
    }
  };
  stale(join(cacheDir, 'rootfs'), /^\.tmp-[0-9a-f]+-(\d+)-[0-9a-f]+$/);
  stale(join(cacheDir, 'work'), /^(\d+)-[0-9a-f]+$/);
  stale(diskDir, /^\.master-[a-z0-9_.-]+-(\d+)-[0-9a-f]+\.part$/);
}

async function requireHostTools(exec: Exec, firmware: Firmware): Promise<void> {
  const missing: string[] = [];
  const tools = [
    ['mmdebstrap', 'mmdebstrap'],
    ['mke2fs', 'e2fsprogs'],
    ['systemctl', 'systemd'],
    ...(firmware === 'uefi' ? [] : [['grub-mkimage', 'grub-common']]),
    // the EFI System Partition, written without a mount
    ...(firmware === 'bios' ? [] : [['mformat', 'mtools'], ['mcopy', 'mtools'], ['mmd', 'mtools']]),
  ];
  for (const [tool, pkg] of tools) {
    const r = await exec(['/bin/sh', '-c', 'PATH="$PATH:/usr/sbin:/sbin" command -v "$1"', 'sh', tool], { allowFailure: true });
    if (r.code !== 0) missing.push(pkg);
  }
  if (firmware !== 'uefi' && !existsSync(join(GRUB_DIR, 'boot.img'))) missing.push('grub-pc-bin');
  if (missing.length) throw new MasterBuildError(`missing on this host: ${[...new Set(missing)].join(', ')} (apt-get install ${[...new Set(missing)].join(' ')}; scripts/install-test-deps.sh installs them)`);
}

function sh(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** mmdebstrap into a temporary directory of the cache, checked, then renamed to its key. */
async function buildRootfs(plan: MasterPlan, log: (l: string) => void, signal?: AbortSignal): Promise<void> {
  const base = join(plan.cacheDir, 'rootfs');
  const debs = join(plan.cacheDir, 'debs');
  mkdirSync(base, { recursive: true, mode: 0o700 });
  mkdirSync(debs, { recursive: true });
  const tmp = join(base, `.tmp-${plan.key}-${process.pid}-${randomBytes(3).toString('hex')}`);
  mkdirSync(tmp, { mode: 0o700 });
  const root = join(tmp, 'root');
  const hooks = join(tmp, 'hooks');
  mkdirSync(hooks);
  writeFileSync(join(hooks, 'essential.sh'), plan.inputs.hooks.essential, { mode: 0o755 });
  writeFileSync(join(hooks, 'customize.sh'), plan.inputs.hooks.customize, { mode: 0o755 });
  const initrdList = join(tmp, 'initrd.list');
  const efi = plan.inputs.efi;
  const efiPkgs = join(tmp, 'efi-packages');
  if (efi) mkdirSync(efiPkgs);
  const argv = [
    'mmdebstrap',
    `--variant=${plan.inputs.variant}`,
    '--mode=auto',
    `--include=${plan.inputs.packages.join(',')}`,
    '--aptopt=APT::Install-Recommends "false"',
    '--aptopt=Acquire::Languages "none"',
    '--aptopt=Acquire::Retries "3"',
    ...plan.inputs.dpkgOptions.map((o) => `--dpkgopt=${o}`),
    // The .debs are kept across builds (a new package list downloads only what is new).
    '--skip=download/empty',
    '--setup-hook=mkdir -p "$1"/var/cache/apt/archives/',
    `--setup-hook=sync-in ${sh(debs)} /var/cache/apt/archives/`,
    `--essential-hook=sh ${sh(join(hooks, 'essential.sh'))} "$1"`,
    // The UEFI boot loaders: downloaded by the image's own apt (while it still has its package
    // lists), unpacked outside the tree, never installed in it.
    ...(efi
      ? [
          `--customize-hook=chroot "$1" sh -c ${sh(EFI_DOWNLOAD)} sh ${efi.packages.map((p) => sh(checkPackageName(p))).join(' ')}`,
          `--customize-hook=sync-out /tmp/ironlens-efi ${sh(efiPkgs)}`,
          '--customize-hook=rm -rf "$1"/tmp/ironlens-efi',
        ]
      : []),
    `--customize-hook=sh ${sh(join(hooks, 'customize.sh'))} "$1"`,
    `--customize-hook=chroot "$1" sh -c 'lsinitramfs "$(readlink -f /initrd.img)"' > ${sh(initrdList)}`,
    `--customize-hook=sync-out /var/cache/apt/archives ${sh(debs)}`,
    '--customize-hook=rm -f "$1"/var/cache/apt/archives/*.deb "$1"/var/cache/apt/*.bin',
    plan.inputs.suite,
    root,
    ...plan.inputs.sources,
  ];
  log(`[master] mmdebstrap ${plan.inputs.suite}: ${plan.inputs.packages.length} packages (${plan.inputs.packages.join(' ')}) from ${plan.inputs.sources.map((s) => s.split(' ')[1]).filter((v, i, a) => a.indexOf(v) === i).join(', ')}`);
  const t0 = Date.now();
  try {
    await execStreaming(argv, {
      signal,
      onLine: (line) => {
        if (line.trim()) log(`[master] mmdebstrap: ${line}`);
      },
    });
    checkRootfs(plan, root, readFileSync(initrdList, 'utf8'));
    if (efi) {
      takeEfiLoaders(efi, efiPkgs, join(tmp, 'efi'));
      rmSync(efiPkgs, { recursive: true, force: true });
    }
    writeFileSync(join(tmp, 'inputs.json'), `${JSON.stringify(plan.inputs, null, 2)}\n`);
    writeFileSync(join(tmp, 'done'), `${new Date().toISOString()} ${((Date.now() - t0) / 1000).toFixed(0)} s\n`);
    rmSync(plan.rootfsDir, { recursive: true, force: true });
    renameSync(tmp, plan.rootfsDir);
    log(`[master] root filesystem built in ${((Date.now() - t0) / 1000).toFixed(0)} s, cached as ${plan.rootfsDir}`);
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true });
    throw err instanceof MasterBuildError ? err : new MasterBuildError(`mmdebstrap failed: ${(err as Error).message}`);
  }
}

/** Run in the image (chroot) with the packages as arguments: `apt-get download`, then `dpkg-deb -x` of each. */
const EFI_DOWNLOAD = 'set -e; rm -rf /tmp/ironlens-efi; mkdir -p /tmp/ironlens-efi/debs /tmp/ironlens-efi/files; cd /tmp/ironlens-efi/debs; apt-get download -q "$@"; for f in *.deb; do dpkg-deb -x "$f" /tmp/ironlens-efi/files; done; ls >/tmp/ironlens-efi/packages.txt';

/**
 * The boot loaders' files, from the unpacked packages into the cached root filesystem's `efi/`
 * (beside `root/`), each checked to be an x86-64 PE image carrying an Authenticode signature;
 * `packages.txt` names the .debs they came from (their versions).
 */
function takeEfiLoaders(efi: NonNullable<RootfsInputs['efi']>, unpacked: string, out: string): void {
  mkdirSync(out);
  for (const f of efi.files) {
    const src = join(unpacked, 'files', f.from);
    if (!existsSync(src)) throw new MasterBuildError(`the UEFI boot loader ${f.from} is not in ${efi.packages.join(', ')}`);
    const bytes = readFileSync(src);
    const pe = peSignature(bytes);
    if (pe?.machine !== 0x8664) throw new MasterBuildError(`${f.from} is not an x86-64 EFI application`);
    if (!pe.signature) throw new MasterBuildError(`${f.from} carries no signature (Secure Boot would refuse it)`);
    writeFileSync(join(out, f.name), bytes);
  }
  writeFileSync(join(out, 'packages.txt'), readFileSync(join(unpacked, 'packages.txt')));
}

/** What the shared root filesystem must and must not hold. */
function checkRootfs(plan: MasterPlan, root: string, initrdList: string): void {
  const hostKeys = readdirSync(join(root, 'etc', 'ssh')).filter((f) => f.startsWith('ssh_host_'));
  if (hostKeys.length) throw new MasterBuildError(`SSH host keys in the master: ${hostKeys.join(', ')}`);
  if (readFileSync(join(root, 'etc', 'machine-id'), 'utf8').trim()) throw new MasterBuildError('a machine-id in the master');
  const listed = new Set(initrdList.split('\n').map((l) => l.trim()));
  for (const p of plan.recipe.initramfsMustHave) if (!listed.has(p)) throw new MasterBuildError(`the initramfs lacks ${p}: it would not log in to its iSCSI root`);
  for (const l of ['vmlinuz', 'initrd.img']) if (!existsSync(join(root, l))) throw new MasterBuildError(`no /${l} in the root filesystem`);
}

/** The disk: a copy of the cached tree plus this build's own files, then the partition table, ext4, the ESP and GRUB, renamed into place. Answers the build's identity. */
async function assembleDisk(plan: MasterPlan, exec: Exec, log: (l: string) => void, signal?: AbortSignal): Promise<string> {
  const work = join(plan.cacheDir, 'work', `${process.pid}-${randomBytes(4).toString('hex')}`);
  mkdirSync(dirname(work), { recursive: true, mode: 0o700 });
  mkdirSync(work, { mode: 0o700 });
  // Beside the target (same filesystem, so the rename is atomic), hidden from the agent's scan
  // (no `_tpl_`, no `.img` ending).
  const part = join(plan.diskDir, `.master-${plan.name}-${process.pid}-${randomBytes(3).toString('hex')}.part`);
  const core = join(work, 'core.img');
  const { layout } = plan;
  const bootsBios = plan.firmware !== 'uefi';
  try {
    const root = join(work, 'root');
    const t0 = Date.now();
    await exec(['cp', '-a', '--reflink=auto', join(plan.rootfsDir, 'root'), root], { timeoutMs: 600_000, signal });
    log(`[master] copied the root filesystem in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    const uuid = randomUUID();
    const build = buildIdentity(plan, uuid);
    personalise(plan, root, uuid, build);
    if (plan.reporter?.enable.length) {
      await exec(['systemctl', `--root=${root}`, 'enable', ...plan.reporter.enable], { signal });
    }
    finalChecks(plan, root);

    writeFileSync(part, '');
    await exec(['truncate', '-s', String(plan.sizeBytes), part]);
    const r = layout.root;
    log(`[master] mke2fs -d: ext4 ${uuid}, ${(r.sectors / 2048).toFixed(0)} MiB from sector ${r.start} (${layout.table.toUpperCase()} partition ${r.number})`);
    await exec(['mke2fs', '-q', '-t', 'ext4', '-L', 'root', '-U', uuid, '-d', root, '-E', `offset=${r.start * SECTOR}`, '-F', part, `${r.sectors / 2}k`], {
      timeoutMs: 600_000,
      signal,
      env: { ...process.env, PATH: `${process.env.PATH}:/usr/sbin:/sbin` },
    });
    if (layout.esp) await writeEsp(plan, part, uuid, work, exec, log, signal);
    if (bootsBios) {
      // GRUB's BIOS stage reads its modules and grub.cfg from the root partition.
      const prefix = `(hd0,${layout.table === 'gpt' ? 'gpt' : 'msdos'}${r.number})/boot/grub`;
      await exec(['grub-mkimage', '-O', 'i386-pc', '-o', core, '-p', prefix, 'biosdisk', layout.table === 'gpt' ? 'part_gpt' : 'part_msdos', 'ext2'], { signal });
    }
    writePartitionTable(part, layout, bootsBios ? { bootImg: readFileSync(join(GRUB_DIR, 'boot.img')), coreImg: readFileSync(core) } : {});
    chmodSync(part, 0o644);
    renameSync(part, plan.target);
    return build;
  } finally {
    rmSync(part, { force: true });
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * The EFI System Partition, FAT32, made and filled with mtools at its byte offset (no mount):
 * the distribution's shim as `\EFI\BOOT\BOOTX64.EFI` (the removable path every UEFI firmware
 * starts, and what iPXE's `sanboot` starts) beside its GRUB and MokManager, the same files
 * under `\EFI\<vendor>\`, and in both a `grub.cfg` that finds the root filesystem by UUID and
 * reads its `/boot/grub/grub.cfg` (the one the BIOS GRUB reads). No fallback loader (`fbx64.efi`):
 * it would write boot entries for the iSCSI disk into the machine's NVRAM.
 */
async function writeEsp(plan: MasterPlan, part: string, uuid: string, work: string, exec: Exec, log: (l: string) => void, signal?: AbortSignal): Promise<void> {
  const esp = plan.layout.esp!;
  const efi = plan.inputs.efi!;
  const dir = join(plan.rootfsDir, 'efi');
  const img = `${part}@@${esp.start * SECTOR}`;
  const env = { ...process.env, MTOOLS_SKIP_CHECK: '1', MTOOLSRC: '/dev/null' };
  const m = (argv: string[]) => exec(argv, { signal, env, timeoutMs: 120_000 });
  // 64 heads x 32 sectors: the geometry FAT wants to be told; -H: the sectors before the partition.
  await m(['mformat', '-i', img, '-T', String(esp.sectors), '-h', '64', '-s', '32', '-H', String(esp.start), '-F', '-v', 'ESP', '-N', randomBytes(4).toString('hex'), '::']);
  const vendor = `::/EFI/${efi.vendor}`;
  await m(['mmd', '-i', img, '::/EFI', '::/EFI/BOOT', vendor]);
  const cfg = join(work, 'esp-grub.cfg');
  // Debian's signed GRUB reads \EFI\debian\grub.cfg (its built-in prefix), or the grub.cfg beside itself.
  writeFileSync(cfg, `search.fs_uuid ${uuid} root\nset prefix=($root)/boot/grub\nconfigfile $prefix/grub.cfg\n`);
  const first = plan.recipe.efi!.first;
  for (const f of efi.files) {
    const src = join(dir, f.name);
    if (!existsSync(src)) throw new MasterBuildError(`${src} is missing from the cached root filesystem: remove ${plan.rootfsDir} to build it again`);
    await m(['mcopy', '-i', img, src, `${vendor}/${f.name}`]);
    await m(['mcopy', '-i', img, src, `::/EFI/BOOT/${f.name === first ? 'BOOTX64.EFI' : f.name}`]);
  }
  await m(['mcopy', '-i', img, cfg, `${vendor}/grub.cfg`]);
  await m(['mcopy', '-i', img, cfg, '::/EFI/BOOT/grub.cfg']);
  // Read back: the removable path must be there before the image is published.
  const listed = (await m(['mdir', '-i', img, '-b', '::/EFI/BOOT'])).stdout;
  if (!/BOOTX64\.EFI/i.test(listed)) throw new MasterBuildError(`the ESP lacks \\EFI\\BOOT\\BOOTX64.EFI: ${listed.trim().slice(0, 300)}`);
  log(`[master] ESP: FAT32, ${esp.sectors / 2048} MiB from sector ${esp.start}: \\EFI\\BOOT\\BOOTX64.EFI (${plan.recipe.efi!.first}) and \\EFI\\${efi.vendor}\\ (${efi.files.map((f) => f.name).join(', ')}), each with grub.cfg → UUID ${uuid}`);
}

/**
 * A build's identity (issue 31): 16 hex of a hash over what makes this disk what it is — the root
 * filesystem's key, the master's name, its filesystem UUID (new at every build), the keys, the
 * control plane and the host reporter's files. Two builds never share one.
 */
export function buildIdentity(plan: MasterPlan, uuid: string): string {
  const h = createHash('sha256').update(JSON.stringify([plan.key, plan.name, uuid, plan.keys, plan.controlPlane ?? null]));
  for (const f of plan.reporter?.files ?? []) h.update(readFileSync(join(plan.reporter!.dir, f.source)));
  return h.digest('hex').slice(0, 16);
}

/** The file the image carries its identity in (keys `master`, `build`: docs/master-images.md); the host reporter sends it as `image`. */
export function masterMarker(fileName: string, build: string): string {
  return `# ironlens master image identity, written by \`ironlens master build\` (the host reporter sends it)\nmaster=${fileName}\nbuild=${build}\n`;
}

/** Everything one disk has of its own: fstab and GRUB (UUID), authorized keys, the host reporter and its URL, its identity. */
function personalise(plan: MasterPlan, root: string, uuid: string, build: string): void {
  const w = (p: string, text: string | Buffer, mode = 0o644) => {
    mkdirSync(dirname(join(root, p)), { recursive: true });
    writeFileSync(join(root, p), text, { mode });
    chmodSync(join(root, p), mode);
  };
  // pass 0: no fsck of the root over iSCSI at boot
  w('etc/fstab', `UUID=${uuid} / ext4 errors=remount-ro,noatime 0 0\n`);
  if (plan.firmware !== 'uefi') {
    // GRUB's BIOS stage reads its modules and grub.cfg from the root partition (the host's GRUB, same version as core.img)
    const mods = join(root, 'boot', 'grub', 'i386-pc');
    mkdirSync(mods, { recursive: true });
    for (const f of readdirSync(GRUB_DIR)) if (f.endsWith('.mod') || f.endsWith('.lst')) writeFileSync(join(mods, f), readFileSync(join(GRUB_DIR, f)));
  }
  w('boot/grub/grub.cfg', grubConfig(plan, uuid));
  mkdirSync(join(root, 'root', '.ssh'), { recursive: true, mode: 0o700 });
  chmodSync(join(root, 'root', '.ssh'), 0o700);
  if (plan.keys.length) w('root/.ssh/authorized_keys', `${plan.keys.join('\n')}\n`, 0o600);
  const rep = plan.reporter;
  if (rep) {
    for (const d of rep.mkdirs) {
      mkdirSync(join(root, d.path), { recursive: true });
      chmodSync(join(root, d.path), d.mode);
    }
    for (const f of rep.files) w(f.target.slice(1), readFileSync(join(rep.dir, f.source)), f.mode);
  }
  if (plan.controlPlane) w('etc/ironlens/host-reporter.conf', `CONTROL_PLANE=${plan.controlPlane}\n`);
  // issue 31: which master this is (its file name on the agent, as a rollout names it) and which build
  w('etc/ironlens-master', masterMarker(basename(plan.target), build));
}

/**
 * `/boot/grub/grub.cfg`, read by both GRUBs. Under BIOS GRUB drives the serial port itself;
 * under UEFI it writes to the firmware's console, which the firmware (or a BMC's
 * serial-over-LAN) carries to the serial port, so the text is not printed twice.
 */
export function grubConfig(plan: Pick<MasterPlan, 'recipe'>, uuid: string): string {
  return [
    'if [ "$grub_platform" = "efi" ]; then',
    '  terminal_input console',
    '  terminal_output console',
    'else',
    '  serial --unit=0 --speed=115200',
    '  terminal_input serial console',
    '  terminal_output serial console',
    'fi',
    'set timeout=0',
    `menuentry '${plan.recipe.menuTitle}' {`,
    `  linux /vmlinuz ${plan.recipe.kernelCommandLine.replace('{uuid}', uuid)}`,
    '  initrd /initrd.img',
    '}',
    '',
  ].join('\n');
}

function finalChecks(plan: MasterPlan, root: string): void {
  const hostKeys = readdirSync(join(root, 'etc', 'ssh')).filter((f) => f.startsWith('ssh_host_'));
  if (hostKeys.length) throw new MasterBuildError(`SSH host keys in the master: ${hostKeys.join(', ')}`);
  for (const f of plan.reporter?.files ?? []) {
    const st = lstatSync(join(root, f.target));
    if ((st.mode & 0o7777) !== f.mode) throw new MasterBuildError(`${f.target}: mode ${(st.mode & 0o7777).toString(8)}, wanted ${f.mode.toString(8)}`);
  }
}
