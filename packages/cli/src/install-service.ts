/**
 * `ironlens install-service [serve|agent]` (issue 23): a hardened systemd unit and an environment
 * file with every setting of that command commented, then what to run next.
 */
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
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
}

const USER_PATTERN = /^[a-z_][a-z0-9_-]{0,31}$/;

export class ServiceError extends Error {}

/** The command's entry point beside this module (`bin/ironlens.mjs` of the package). */
export function defaultEntry(): string {
  return resolve(fileURLToPath(new URL('.', import.meta.url)), '..', 'bin', 'ironlens.mjs');
}

export function serviceOptions(kind: string | undefined, flags: Record<string, string | undefined>): ServiceOptions {
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
  };
  if (!USER_PATTERN.test(o.user) || o.user === 'root') throw new ServiceError(`--user must be a system user name other than root, got ${JSON.stringify(o.user)}`);
  for (const [name, p] of [['--data-dir', o.dataDir], ['--disk-dir', o.diskDir], ['--unit-dir', o.unitDir], ['--env-dir', o.envDir]] as const) {
    // Paths go into a unit file: absolute, and nothing systemd would read as a specifier or a separator.
    if (!isAbsolute(p) || !/^\/[A-Za-z0-9._/-]*$/.test(p) || p.includes('/../') || p.endsWith('/..')) throw new ServiceError(`${name} must be an absolute path of letters, digits, '.', '_', '-' and '/', got ${JSON.stringify(p)}`);
  }
  for (const p of [o.node, o.entry]) if (!/^\/[A-Za-z0-9._/+@-]*$/.test(p)) throw new ServiceError(`cannot write ${p} into a unit file (spaces or specifiers in the path)`);
  return o;
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
    'ProtectHome=yes',
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
      // serve needs no privilege: its ports are above 1024, dnsmasq is reloaded by a configured way.
      'CapabilityBoundingSet=',
      'AmbientCapabilities=',
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
  else steps.push(`  mkdir -p ${o.diskDir} && modprobe target_core_mod 2>/dev/null; systemctl enable --now tgt   # stgt (or LIO) on this node`);
  steps.push(
    `  $EDITOR ${join(o.envDir, envName(o.kind))}   # set the tokens (${o.kind === 'serve' ? 'IPXE_CP_TOKEN, IRONLENS_CONSOLE_TOKEN' : 'IPXE_AGENT_TOKEN'}) before exposing it`,
    '  systemctl daemon-reload',
    `  systemctl enable --now ${name}`,
    `  journalctl -u ${name} -f   # its start lines say where it listens${o.kind === 'serve' ? ' and where the data dir is' : ''}`,
  );
  return `${steps.join('\n')}\n`;
}

/** Writes both files (each atomically; the env file is never overwritten, it holds the operator's edits). */
export function installService(o: ServiceOptions): { unit: string; env: string; envKept: boolean } {
  if (!existsSync(o.entry)) throw new ServiceError(`the command's entry point ${o.entry} does not exist`);
  const unit = join(o.unitDir, unitName(o.kind));
  const env = join(o.envDir, envName(o.kind));
  mkdirSync(o.unitDir, { recursive: true });
  mkdirSync(o.envDir, { recursive: true, mode: 0o755 });
  writeFileSync(`${unit}.partial`, renderUnit(o), { mode: 0o644 });
  renameSync(`${unit}.partial`, unit);
  const envKept = existsSync(env);
  if (!envKept) {
    writeFileSync(`${env}.partial`, renderEnvFile(o), { mode: 0o600 });
    renameSync(`${env}.partial`, env);
  }
  mkdirSync(dirname(unit), { recursive: true });
  return { unit, env, envKept };
}
