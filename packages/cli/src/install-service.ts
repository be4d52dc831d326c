/**
 * `ironlens install-service [serve|agent]` (issue 23): a hardened systemd unit and an environment
 * file with every setting of that command commented, then what to run next.
 */
import { existsSync, lstatSync, mkdirSync, readdirSync, realpathSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { replaceFileSync } from '@ironlens/core/fs';
import { SETTINGS } from './settings';

export type ServiceKind = 'serve' | 'agent';

export interface ServiceOptions {
  kind: ServiceKind;
  /** The user `serve` runs as. Default is `ironlens`. The agent runs as root (see the unit). */
  user: string;
  /** serve: the data dir. Default is `/var/lib/ironlens` (the unit's `StateDirectory`). */
  dataDir: string;
  /** agent: where disk images live. Default is `/home/iscsi_img`, the agent's own default. */
  diskDir: string;
  /** Where the unit goes. Default is `/etc/systemd/system`. */
  unitDir: string;
  /** Where the environment file goes. Default is `/etc/ironlens`. */
  envDir: string;
  /** The Node.js binary and the command's entry point, absolute. Default: the running ones. */
  node: string;
  entry: string;
  /** Who must own the code `ExecStart` runs (uid). Default is `0` (root). */
  codeOwner?: number;
  /**
   * serve runs its own dnsmasq (`IRONLENS_BOOT_SERVICES`, issue 30): the unit grants the three
   * capabilities dnsmasq needs as a user other than root (DHCP's port 67, TFTP's 69, the ARP
   * entries of the addresses it hands out, router advertisements' ICMPv6 socket), as ambient
   * capabilities that pass to the dnsmasq it starts, and no other. Default is `false`: none.
   */
  bootServices?: boolean;
}

/** What dnsmasq needs, run by serve as its own user (tried: without any one of them it exits at start). */
export const BOOT_SERVICES_CAPABILITIES = 'CAP_NET_BIND_SERVICE CAP_NET_ADMIN CAP_NET_RAW';

const USER_PATTERN = /^[a-z_][a-z0-9_-]{0,31}$/;

export class ServiceError extends Error {}

/** The command's entry point beside this module (`bin/ironlens.mjs` of the package). */
export function defaultEntry(): string {
  return resolve(fileURLToPath(new URL('.', import.meta.url)), '..', 'bin', 'ironlens.mjs');
}

export function serviceOptions(kind: string | undefined, flags: Record<string, string | undefined>, switches: { bootServices?: boolean } = {}): ServiceOptions {
  const k = kind ?? 'serve';
  if (k !== 'serve' && k !== 'agent') throw new ServiceError(`the service is serve or agent, not ${JSON.stringify(k)}`);
  const o: ServiceOptions = {
    kind: k,
    user: flags.user ?? 'ironlens',
    dataDir: flags.dataDir ?? '/var/lib/ironlens',
    diskDir: flags.diskDir ?? '/home/iscsi_img',
    unitDir: flags.unitDir ?? '/etc/systemd/system',
    envDir: flags.envDir ?? '/etc/ironlens',
    node: process.execPath,
    entry: defaultEntry(),
    ...(switches.bootServices ? { bootServices: true } : {}),
  };
  if (o.bootServices && k !== 'serve') throw new ServiceError('--boot-services is for serve: the boot services run in ironlens serve');
  if (!USER_PATTERN.test(o.user) || o.user === 'root') throw new ServiceError(`--user must be a system user name other than root, got ${JSON.stringify(o.user)}`);
  for (const [name, p] of [['--data-dir', o.dataDir], ['--disk-dir', o.diskDir], ['--unit-dir', o.unitDir], ['--env-dir', o.envDir]] as const) {
    // Paths go into a unit file: absolute, and nothing systemd would read as a specifier or a separator.
    if (!isAbsolute(p) || !/^\/[A-Za-z0-9._/-]*$/.test(p) || p.includes('/../') || p.endsWith('/..')) throw new ServiceError(`${name} must be an absolute path of letters, digits, '.', '_', '-' and '/', got ${JSON.stringify(p)}`);
  }
  for (const p of [o.node, o.entry]) if (!/^\/[A-Za-z0-9._/+@-]*$/.test(p)) throw new ServiceError(`cannot write ${p} into a unit file (spaces or specifiers in the path)`);
  return o;
}

/** The directories `ProtectHome=` hides. */
const HOMES = ['/home', '/root', '/run/user'];

/**
 * `ProtectHome=` for a unit whose writable directory is `dir`: `yes` (the homes inaccessible)
 * unless `dir` is under one of them, as the agent's default `DISK_DIR=/home/iscsi_img` is. Then
 * `yes` would hide it whatever `ReadWritePaths=` says (no mount point is left under an
 * inaccessible /home; systemd/systemd#7153), so the homes become an empty read-only tmpfs with
 * `dir` alone bound in (`ProtectHome=tmpfs` with `BindPaths=`, as systemd.exec(5) describes).
 */
function protectHome(dir: string): string[] {
  if (!HOMES.some((h) => dir === h || dir.startsWith(`${h}/`))) return ['ProtectHome=yes'];
  return ['ProtectHome=tmpfs', `BindPaths=${dir}`];
}

const unitName = (kind: ServiceKind) => (kind === 'serve' ? 'ironlens.service' : 'ironlens-agent.service');
const envName = (kind: ServiceKind) => `${kind}.env`;

/** The unit file's text. */
export function renderUnit(o: ServiceOptions): string {
  const envFile = join(o.envDir, envName(o.kind));
  const common = [
    `EnvironmentFile=-${envFile}`,
    `ExecStart=${o.node} ${o.entry} ${o.kind}`,
    'Restart=on-failure',
    'RestartSec=5s',
    'TimeoutStopSec=30s',
    'KillMode=mixed',
    'UMask=0077',
    'NoNewPrivileges=yes',
    'ProtectSystem=strict',
    ...protectHome(o.kind === 'serve' ? o.dataDir : o.diskDir),
    'PrivateTmp=yes',
    'ProtectKernelModules=yes',
    'ProtectKernelLogs=yes',
    'ProtectControlGroups=yes',
    'ProtectClock=yes',
    'ProtectHostname=yes',
    'RestrictSUIDSGID=yes',
    'RestrictRealtime=yes',
    'LockPersonality=yes',
    'SystemCallArchitectures=native',
    // Node's JIT writes and runs code: MemoryDenyWriteExecute cannot be set.
  ];
  if (o.kind === 'serve') {
    const state = o.dataDir.startsWith('/var/lib/') && !o.dataDir.slice('/var/lib/'.length).includes('/') ? o.dataDir.slice('/var/lib/'.length) : null;
    return `${[
      '[Unit]',
      'Description=ironlens: boot control plane (:4839) and console (:8080)',
      'After=network-online.target',
      'Wants=network-online.target',
      '',
      '[Service]',
      'Type=exec',
      `User=${o.user}`,
      `Group=${o.user}`,
      `Environment=IRONLENS_DATA_DIR=${o.dataDir}`,
      ...common,
      state ? `StateDirectory=${state}` : `ReadWritePaths=${o.dataDir}`,
      ...(state ? ['StateDirectoryMode=0700'] : []),
      'PrivateDevices=yes',
      'ProtectKernelTunables=yes',
      'RestrictNamespaces=yes',
      ...(o.bootServices
        ? [
            // Its own dnsmasq (IRONLENS_BOOT_SERVICES) needs them (ports 67 and 69, ARP entries, router advertisements): ambient, so they pass to it.
            `CapabilityBoundingSet=${BOOT_SERVICES_CAPABILITIES}`,
            `AmbientCapabilities=${BOOT_SERVICES_CAPABILITIES}`,
          ]
        : [
            // serve needs no privilege: its ports are above 1024, dnsmasq is reloaded by a configured way.
            'CapabilityBoundingSet=',
            'AmbientCapabilities=',
          ]),
      'RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK',
      '',
      '[Install]',
      'WantedBy=multi-user.target',
    ].join('\n')}\n`;
  }
  return `${[
    '[Unit]',
    'Description=ironlens storage agent (:4840): iSCSI targets for system disks',
    'After=network-online.target tgt.service',
    'Wants=network-online.target',
    '',
    '[Service]',
    'Type=exec',
    // tgtd's control socket (/run/tgtd) and LIO's configfs (/sys/kernel/config/target) belong to
    // root: the agent runs as root, but with an empty capability set (it needs no privilege over
    // files it does not own, no raw network, no module loading: load target_core_mod at boot).
    'User=root',
    `Environment=DISK_DIR=${o.diskDir}`,
    ...common,
    `ReadWritePaths=${o.diskDir} -/run/tgtd -/sys/kernel/config`,
    'CapabilityBoundingSet=',
    'AmbientCapabilities=',
    'RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6',
    '',
    '[Install]',
    'WantedBy=multi-user.target',
  ].join('\n')}\n`;
}

/** The environment file: every setting of the command, commented, with its default and doc. */
export function renderEnvFile(o: ServiceOptions): string {
  const lines = [
    `# ironlens ${o.kind}: settings (read by ${unitName(o.kind)}). Each line is commented out with its default;`,
    '# uncomment and change what you need, then: systemctl restart ' + unitName(o.kind).replace('.service', ''),
    '# Keep this file 0600: it may hold tokens. Secrets may instead come from a credential store.',
    '',
  ];
  for (const s of SETTINGS.filter((x) => x.for.includes(o.kind))) {
    lines.push(`# ${s.text} (${s.doc})${s.secret ? ' — a secret' : ''}`);
    const def = s.name === 'IRONLENS_DATA_DIR' ? o.dataDir : s.name === 'DISK_DIR' ? o.diskDir : s.default;
    lines.push(`#${s.name}=${def}`, '');
  }
  return `${lines.join('\n')}`;
}

/** What to run next, for the operator. */
export function nextSteps(o: ServiceOptions, written: boolean): string {
  const name = unitName(o.kind).replace('.service', '');
  const steps = [
    written ? `wrote ${join(o.unitDir, unitName(o.kind))} and ${join(o.envDir, envName(o.kind))}` : 'dry run: nothing written',
    'next:',
  ];
  if (o.kind === 'serve') steps.push(`  useradd --system --user-group --home-dir ${o.dataDir} --shell /usr/sbin/nologin ${o.user}   # once`);
  if (o.kind === 'serve' && o.bootServices) steps.push('  apt-get install dnsmasq-base ipxe   # the dnsmasq the boot services run and the iPXE binaries they serve');
  if (o.kind === 'agent') steps.push(`  mkdir -p ${o.diskDir} && modprobe target_core_mod 2>/dev/null; systemctl enable --now tgt   # stgt (or LIO) on this node`);
  steps.push(
    `  $EDITOR ${join(o.envDir, envName(o.kind))}   # set the tokens (${o.kind === 'serve' ? 'IPXE_CP_TOKEN, IRONLENS_CONSOLE_TOKEN' : 'IPXE_AGENT_TOKEN'}) before exposing it${o.bootServices ? ', and IRONLENS_BOOT_SERVICES with its interface' : ''}`,
    '  systemctl daemon-reload',
    `  systemctl enable --now ${name}`,
    `  journalctl -u ${name} -f   # its start lines say where it listens${o.kind === 'serve' ? ' and where the data dir is' : ''}`,
  );
  return `${steps.join('\n')}\n`;
}

/** The folder of the package `entry` belongs to (`<root>/packages/cli/bin/ironlens.mjs`, in a checkout and in the release alike). */
export function packageRootOf(entry: string): string {
  return resolve(dirname(entry), '..', '..', '..');
}

/**
 * What makes the code `ExecStart` runs changeable by someone else than `owner` (root): the
 * package's `packages/`, `node_modules/` and `package.json` (everything Node loads from there),
 * each file and folder, must belong to `owner`; the Node.js binary and every folder above them to
 * `owner` or root (root may change anything anyway); and none may be writable by a group or
 * another user (a folder above with the sticky bit, as /tmp, only by its owner's entries). A
 * symlink is followed to what it names. One line per problem, at most `max`. (Issue 29, finding
 * 12: a unit pointing into a user's checkout hands that user root.) With the default owner, root,
 * both rules are one: root's alone.
 */
export function codeProblems(node: string, entry: string, owner = 0, max = 10): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  const check = (path: string, above: boolean, rootToo = above): void => {
    if (problems.length >= max || seen.has(path)) return;
    seen.add(path);
    let st: ReturnType<typeof lstatSync>;
    try {
      st = lstatSync(path);
    } catch (err) {
      problems.push(`${path}: ${(err as NodeJS.ErrnoException).code ?? 'unreadable'}`);
      return;
    }
    if (st.isSymbolicLink()) {
      let target: string;
      try {
        target = realpathSync(path);
      } catch {
        problems.push(`${path}: a symlink to nothing`);
        return;
      }
      ancestors(target);
      walk(target);
      return;
    }
    if (st.uid !== owner && !(rootToo && st.uid === 0)) problems.push(`${path}: owned by uid ${st.uid}, not ${owner}`);
    else if (st.mode & 0o022 && !(above && st.isDirectory() && st.mode & 0o1000)) problems.push(`${path}: writable by ${st.mode & 0o002 ? 'anyone' : 'its group'} (mode ${(st.mode & 0o7777).toString(8)})`);
  };
  const ancestors = (path: string): void => {
    for (let d = dirname(path); ; d = dirname(d)) {
      check(d, true);
      if (d === dirname(d)) break;
    }
  };
  const walk = (path: string): void => {
    check(path, false);
    if (problems.length >= max) return;
    let st: ReturnType<typeof lstatSync>;
    try {
      st = lstatSync(path);
    } catch {
      return;
    }
    if (!st.isDirectory()) return;
    for (const name of readdirSync(path)) walk(join(path, name));
  };
  const nodeReal = realpathSync(node);
  ancestors(nodeReal);
  check(nodeReal, false, true);
  const root = realpathSync(packageRootOf(entry));
  ancestors(root);
  check(root, true, false);
  for (const name of ['packages', 'node_modules', 'package.json']) if (existsSync(join(root, name))) walk(join(root, name));
  return problems.slice(0, max);
}

/**
 * Writes both files (each atomically; the env file is never overwritten, it holds the operator's
 * edits), once the code the unit would run is known to be root's alone ({@link codeProblems}).
 */
export function installService(o: ServiceOptions): { unit: string; env: string; envKept: boolean } {
  if (!existsSync(o.entry)) throw new ServiceError(`the command's entry point ${o.entry} does not exist`);
  const problems = codeProblems(o.node, o.entry, o.codeOwner ?? 0);
  if (problems.length > 0) {
    throw new ServiceError(
      `refusing to write a unit that runs ${o.entry} as ${o.kind === 'agent' ? 'root' : o.user}: its code could be changed by someone else than root (${problems.join('; ')}). Install ironlens as root (npm install -g of the release package, docs/operate.md) and run install-service from that installation`,
    );
  }
  const unit = join(o.unitDir, unitName(o.kind));
  const env = join(o.envDir, envName(o.kind));
  mkdirSync(o.unitDir, { recursive: true });
  mkdirSync(o.envDir, { recursive: true, mode: 0o755 });
  replaceFileSync(unit, renderUnit(o), 0o644);
  const envKept = existsSync(env);
  if (!envKept) {
    replaceFileSync(env, renderEnvFile(o), 0o600);
  }
  mkdirSync(dirname(unit), { recursive: true });
  return { unit, env, envKept };
}
