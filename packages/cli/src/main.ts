/**
 * The `ironlens` command line. This module stays light on purpose: it holds the usage texts
 * and the argument parser, and loads a subcommand's modules (`import()`) only when that
 * subcommand runs, so `ironlens --help` costs little more than Node starting
 * (the compiled bundle splits each of these imports into chunks of its own).
 */
import type { Env } from '@ironlens/core';

const LISTEN_HINT = 'host:port | off';

const USAGE = `usage: ironlens <command> [options]
       ironlens <command> --help     a command's own usage

commands:
  serve                   boot control plane (every interface, :4839) and console (127.0.0.1:8080)
  agent                   storage agent (:4840), configured by IPXE_AGENT_* and DISK_DIR
  kind                    the kind panel alone, with the seed's exact /api/v1 layout (127.0.0.1:8080)
  import DIR [--replace]  load the old file layout (config/, state/, dnsmasq/) into the store
  export DIR              write the store out in that file layout
  master build            build a master image that boots diskless (Debian 12) into a DISK_DIR

day-to-day work against a running ironlens, through its API (--url, IRONLENS_TOKEN, -o json):
  devices                 list, show, create, revoke, bind, unbind, power
  workers                 list, show, create, delete
  disks                   list, create, delete (a worker's system disks)
  agents                  list, show
  clusters                list, show
  jobs                    list, show, watch (bootstrap jobs, with a progress bar)
  operations              the operations log
  login                   save the URL and a token (from standard input) for these commands
  logout                  forget them
  completion              a bash or zsh completion script
  migrate [--status]      create or upgrade the store, then exit (--status: say what would run)
  install-service [serve|agent] [--dry-run]
                          a hardened systemd unit and an environment file
  backup FILE             a consistent copy of the SQLite store and its sealed secret key
  restore FILE            put a backup back into the data dir (not while serve runs)
  token create|list|revoke  named API tokens with a role (viewer, operator, admin), in the store

options (each mirrors an environment variable):
  --data-dir DIR          IRONLENS_DATA_DIR (default: .ironlens in a checkout, else
                          /var/lib/ironlens for root, $XDG_STATE_HOME/ironlens otherwise)
  --boot-listen ADDR      IRONLENS_BOOT_LISTEN (${LISTEN_HINT}; default 0.0.0.0:4839)
  --console-listen ADDR   IRONLENS_CONSOLE_LISTEN (${LISTEN_HINT}; default 127.0.0.1:8080)
  --agent-listen ADDR     IRONLENS_AGENT_LISTEN (default 0.0.0.0:4840)
  -h, --help              this text
`;

const TOKEN_USAGE_TEXT = `usage: ironlens token create --name NAME --role viewer|operator|admin [--expires 10s|5m|12h|30d]
       ironlens token list [--json]
       ironlens token revoke NAME

Named API tokens, in the store of IRONLENS_DATA_DIR / IRONLENS_DATABASE_URL (no server needed).
\`create\` prints the token once, on stdout; the store keeps only its hash. A token works on both
listeners of \`ironlens serve\` (Authorization: Bearer); once one exists, both require a token.
Revocation takes effect on every replica within a second (docs/access.md).
`;

/** The API client's commands (packages/cli/src/client.ts runs them). */
export const CLIENT_COMMANDS = ['devices', 'workers', 'disks', 'agents', 'clusters', 'jobs', 'operations', 'login', 'logout', 'completion'] as const;
export type ClientCommand = (typeof CLIENT_COMMANDS)[number];

/** Each command's verbs, for the usage, the parser and the completions. */
export const VERBS: Record<ClientCommand, string[]> = {
  devices: ['list', 'show', 'create', 'revoke', 'bind', 'unbind', 'power'],
  workers: ['list', 'show', 'create', 'delete'],
  disks: ['list', 'create', 'delete'],
  agents: ['list', 'show'],
  clusters: ['list', 'show'],
  jobs: ['list', 'show', 'watch'],
  operations: ['list'],
  login: [],
  logout: [],
  completion: ['bash', 'zsh'],
};

const CLIENT_OPTIONS = `options of every client command:
  --url URL       the console listener of the ironlens to talk to (IRONLENS_URL; else the one
                  \`ironlens login\` saved; default http://127.0.0.1:8080)
  -o json         the API's JSON instead of a table
  IRONLENS_TOKEN  the bearer token (else the one \`ironlens login\` saved)
exit codes: 0 done; 1 the API refused (its status and code are printed); 2 usage error
`;

export const CLIENT_USAGE: Record<ClientCommand, string> = {
  devices: `usage: ironlens devices list [--state pooled|bound|revoked] | show MAC | create MAC | revoke MAC
                        | bind MAC WORKER [--force] | unbind MAC
                        | power MAC on|off|cycle|soft-off [--network]   (BMC power, where configured)

The device pool (seed 004): list, one device, declare, revoke, bind to a worker, unbind.
${CLIENT_OPTIONS}`,
  workers: `usage: ironlens workers list | show ID | create ID [--mac MAC] [--hostname NAME] | delete ID [--delete-disk]

Workers: list, one worker, create (bound to a pooled device with --mac), delete.
${CLIENT_OPTIONS}`,
  disks: `usage: ironlens disks list WORKER | create WORKER --os OS [--master NAME] [--size SIZE] [--agent ID]
                     | delete WORKER OS [--delete-file]

A worker's system disks: cloned from a master image (--master; see GET /masters) or empty (--size).
${CLIENT_OPTIONS}`,
  agents: `usage: ironlens agents list | show ID

The storage agents and their health.
${CLIENT_OPTIONS}`,
  clusters: `usage: ironlens clusters list | show ID

Registered Kubernetes clusters (the cluster manager).
${CLIENT_OPTIONS}`,
  jobs: `usage: ironlens jobs list | show ID | watch ID

Bootstrap jobs (Kubespray): list, one job, or follow one with a progress bar until it ends
(exit 0 when it succeeded, 1 otherwise).
${CLIENT_OPTIONS}`,
  operations: `usage: ironlens operations [list] [--limit N] [--mac MAC]

The operations log, newest last.
${CLIENT_OPTIONS}`,
  login: `usage: ironlens login [--url URL]

Saves the URL and a token (read from standard input, first line; never an argument) into
$XDG_CONFIG_HOME/ironlens/cli.json (default ~/.config/ironlens/cli.json, mode 0600), checked
against the API first.
`,
  logout: `usage: ironlens logout

Forgets the saved URL and token.
`,
  completion: `usage: ironlens completion bash|zsh

Prints a completion script: \`source <(ironlens completion bash)\`, or for zsh
\`ironlens completion zsh > "\${fpath[1]}/_ironlens"\`.
`,
};

/** Each command's own usage: what `ironlens <command> --help` prints. */
export const COMMAND_USAGE: Record<string, string> = {
  ...CLIENT_USAGE,
  serve: `usage: ironlens serve [--data-dir DIR] [--boot-listen ADDR] [--console-listen ADDR]

Runs the boot control plane and the console until SIGINT or SIGTERM.

  --boot-listen ADDR     IRONLENS_BOOT_LISTEN: the provisioning listener (seed 004's API, iPXE
                         boot vars). ${LISTEN_HINT}; default 0.0.0.0:4839, every interface.
  --console-listen ADDR  IRONLENS_CONSOLE_LISTEN: the console (kind panel under /kind, docs).
                         ${LISTEN_HINT}; default 127.0.0.1:8080, this machine only.
  --data-dir DIR         IRONLENS_DATA_DIR: the store and rendered files (default: .ironlens in a
                         checkout, else /var/lib/ironlens for root, $XDG_STATE_HOME/ironlens,
                         i.e. ~/.local/state/ironlens, otherwise). One serve per SQLite data dir.

  IPXE_CP_TOKEN            admin token of the provisioning API, named env:IPXE_CP_TOKEN
  IRONLENS_CONSOLE_TOKEN   admin token of the console listener, named env:IRONLENS_CONSOLE_TOKEN
                           (neither set and no named token, \`ironlens token create\`: open)
  IRONLENS_DATABASE_URL    postgres://user:pass@host:5432/db: keep the state in PostgreSQL (any
                           number of serve replicas may share it; unset: SQLite in the data dir)
  IRONLENS_SECRET_KEY      32 bytes (64 hex characters or base64) that seal the secrets in the
                           store (unset: the key file secret.key in the data dir, made at first
                           start; replicas must share one key)
  IPXE_CP_DNSMASQ_RELOAD, IPXE_CP_DNSMASQ_CONTAINER, IPXE_CP_DNSMASQ_PID_FILE,
  IPXE_CP_DNSMASQ_RELOAD_COMMAND   how dnsmasq is reloaded (unset: detected at start)

Both listeners serve Prometheus metrics at /metrics, behind their token when it is set
(docs/metrics.md).
`,
  agent: `usage: ironlens agent [--agent-listen ADDR]

Runs the storage agent of an iSCSI node until SIGINT or SIGTERM.

  --agent-listen ADDR   IRONLENS_AGENT_LISTEN (default 0.0.0.0:4840, every interface)
  DISK_DIR              where disk images and masters live (default /home/iscsi_img)
  IPXE_AGENT_TOKEN      bearer token the agent requires
  IPXE_AGENT_BACKEND    stgt (tgtadm) or lio (targetcli)
  IPXE_AGENT_*          the other settings, in docs/agent.md
`,
  kind: `usage: ironlens kind

Runs the kind panel alone, with the seed's exact /api/v1 layout, until SIGINT or SIGTERM.

  KIND_K8S_WEB_HOST   listen address (default 127.0.0.1, this machine only)
  KIND_K8S_WEB_PORT   listen port (default 8080)
  KIND_K8S_TOKEN      bearer token the API requires (unset: open)
  KIND_K8S_DB         its store (default <data dir>/kind/kind.sqlite, the data dir of serve)
  KIND_K8S_CLUSTERS_DIR  kubeconfigs of its clusters (default <data dir>/kind/clusters)
  KIND_K8S_*          the other settings, in docs/kind.md
`,
  import: `usage: ironlens import DIR [--replace] [--data-dir DIR]

Loads the old file layout (config/agents.yml, state/workers.yml, state/devices.yml,
state/settings.json, state/operations.jsonl, dnsmasq/dhcp-hosts.conf) from DIR into the store,
then re-renders dhcp-hosts.conf. Refuses a store that already has an operations log unless
--replace is given.
`,
  export: `usage: ironlens export DIR [--bmc-passwords] [--data-dir DIR]

Writes the store out in the old file layout under DIR. Devices' BMCs are written without their
passwords; --bmc-passwords adds each one sealed with this store's secret key (only a store with
the same IRONLENS_SECRET_KEY can import them), in a state/devices.yml of mode 0600.
`,
  token: TOKEN_USAGE_TEXT,
  'install-service': `usage: ironlens install-service [serve|agent] [--user USER] [--data-dir DIR]
                        [--disk-dir DIR] [--unit-dir DIR] [--env-dir DIR] [--dry-run]

Writes a hardened systemd unit (ironlens.service for serve, ironlens-agent.service for the agent)
into --unit-dir (default /etc/systemd/system) and an environment file <env-dir>/<serve|agent>.env
(default /etc/ironlens, mode 0600, never overwritten) with every setting commented and its default,
then says what to run next. --dry-run prints both instead of writing them.

  --user USER      the user serve runs as (default ironlens; created by you, as printed)
  --data-dir DIR   serve's data dir (default /var/lib/ironlens, the unit's StateDirectory)
  --disk-dir DIR   the agent's DISK_DIR (default /home/iscsi_img)
`,
  backup: `usage: ironlens backup FILE [--key-file FILE] [--data-dir DIR]

Writes FILE (mode 0600): a consistent copy of the live SQLite store (SQLite's online backup API;
serve may keep running and writing meanwhile) and the secret key that opens the secrets sealed in
it (IRONLENS_SECRET_KEY, or secret.key in the data dir), itself sealed under a passphrase. The
passphrase is the first line of standard input, or of --key-file (IRONLENS_BACKUP_KEY_FILE);
at least 8 characters; never an argument. On PostgreSQL (IRONLENS_DATABASE_URL) it says to use
pg_dump, and to keep the secret key with the dump. docs/deployment.md: backups.
`,
  restore: `usage: ironlens restore FILE [--replace] [--key-file FILE] [--data-dir DIR]

Puts a backup made by \`ironlens backup\` into the data dir: the store and its secret key (written
as secret.key, 0600, unless IRONLENS_SECRET_KEY is set, which must then be the backup's key).
Refused while an ironlens serve uses the data dir, over an existing store unless --replace, with a
wrong passphrase (first line of standard input, or of --key-file), or when the key does not open
the store's secrets. A store from an older version is upgraded by the next start (or migrate).
`,
  migrate: `usage: ironlens migrate [--status] [--data-dir DIR]

Creates or upgrades the store in IRONLENS_DATA_DIR (or IRONLENS_DATABASE_URL), then exits.
`,
  master: `usage: ironlens master build --os debian-12 --disk-dir DIR [--name NAME] [--size 4G]
                             [--firmware both|uefi|bios]
                             [--authorized-key FILE_OR_KEY]... [--control-plane URL]
                             [--package PKG]... [--mirror URL] [--security-mirror URL]
                             [--cache-dir DIR]

Builds a master image, DIR/_tpl_<NAME>.img, that boots diskless through iPXE sanboot with its
root on the iSCSI disk cloned from it (docs/master-images.md). Run it on the storage node, as
root (mmdebstrap's root mode); progress on stderr, the result as JSON on stdout.

  --os OS                 debian-12
  --disk-dir DIR          the agent's DISK_DIR (GET /masters lists the image)
  --name NAME             master name (default debian_12): DIR/_tpl_NAME.img
  --size SIZE             disk size (default 4G; sparse)
  --firmware F            both (default: GPT with an EFI System Partition holding the
                          distribution's signed shim and GRUB, and a BIOS boot partition),
                          uefi, or bios (an MBR, as masters were before UEFI)
  --authorized-key K      root's authorized key: a key line or a file of them (repeatable);
                          typically ironlens' own, GET /api/cluster/bootstrap/ssh-public-key
  --control-plane URL     where the host reporter reports (default: the iBFT's DHCP server, :4839)
  --package PKG           one more Debian package in the image (repeatable)
  --mirror URL            the Debian archive (IRONLENS_MASTER_MIRROR; default: this host's apt sources)
  --security-mirror URL   the security archive (IRONLENS_MASTER_SECURITY_MIRROR; default: likewise)
  --cache-dir DIR         IRONLENS_MASTER_CACHE (default ~/.cache/ironlens/master)

The root filesystem is cached by its inputs (OS, packages, mirrors, hooks, UEFI or not): a second build with
the same inputs, or with other keys or another control-plane URL, only assembles the disk
(seconds). A failed build leaves no _tpl_ file. No SSH host key is in the image: every clone makes
its own at first boot.
`,
};


const FLAGS: Record<string, string> = {
  '--data-dir': 'IRONLENS_DATA_DIR',
  '--boot-listen': 'IRONLENS_BOOT_LISTEN',
  '--console-listen': 'IRONLENS_CONSOLE_LISTEN',
  '--agent-listen': 'IRONLENS_AGENT_LISTEN',
  '--key-file': 'IRONLENS_BACKUP_KEY_FILE',
  '--disk-dir': 'DISK_DIR',
  '--user': 'IRONLENS_SERVICE_USER',
  '--unit-dir': 'IRONLENS_SERVICE_UNIT_DIR',
  '--env-dir': 'IRONLENS_SERVICE_ENV_DIR',
};

/** Switches (no value) each command accepts, besides `--help`/`-h`. */
const SWITCHES: Record<string, string[]> = { import: ['--replace'], export: ['--bmc-passwords'], restore: ['--replace'], migrate: ['--status'], 'install-service': ['--dry-run'] };

export interface ParsedArgs {
  positional: string[];
  env: Record<string, string>;
  switches: Set<string>;
  /** `--help` or `-h` was given. */
  help: boolean;
}

/** Splits argv into positionals and env overrides from the flags above. */
export function parseArgs(argv: string[]): ParsedArgs {
  const positional: string[] = [];
  const env: Record<string, string> = {};
  const switches = new Set<string>();
  let help = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const [name, inline] = a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
    if (a === '--help' || a === '-h') help = true;
    else if (FLAGS[name]) {
      const v = inline ?? argv[++i];
      if (v === undefined) throw new Error(`${name} needs a value`);
      env[FLAGS[name]] = v;
    } else if (a.startsWith('-') && a !== '-') switches.add(a);
    else positional.push(a);
  }
  return { positional, env, switches, help };
}

const log = (msg: string) => process.stderr.write(`[ironlens] ${msg}\n`);

/**
 * Waits for SIGINT/SIGTERM, closes what runs, says so. `started` may still be starting: a signal
 * that arrives meanwhile (the listeners answer before the start-up work behind them is done)
 * stops it once it has started, instead of killing the process half-way.
 */
function untilSignal(what: string, started: Promise<{ close(): Promise<void> }>): Promise<number> {
  return new Promise((resolve, reject) => {
    started.catch((err) => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      reject(err);
    });
    const stop = async (signal: NodeJS.Signals) => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      log(`${signal}: stopping ${what}`);
      try {
        await (await started).close();
        log(`${what} stopped`);
        resolve(0);
      } catch (err) {
        log(`${what} did not stop cleanly: ${(err as Error).message}`);
        resolve(1);
      }
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

/** An address-in-use (or not-assignable) error, with the setting that moves the listener. */
function withListenHint(err: unknown, setting: string): Error {
  const code = (err as NodeJS.ErrnoException).code;
  const e = err as Error;
  if (code === 'EADDRINUSE' || code === 'EADDRNOTAVAIL' || code === 'EACCES') return new Error(`${e.message}; change ${setting}`);
  return e;
}

async function run(cmd: string, rest: string[], parsed: ParsedArgs, env: Env): Promise<number> {
  switch (cmd) {
    case 'serve': {
      const { serve } = await import('./serve');
      return untilSignal('ironlens serve', serve(env));
    }
    case 'agent': {
      const { startAgent } = await import('@ironlens/agent');
      const running = await startAgent(env).catch((err) => {
        throw withListenHint(err, 'IRONLENS_AGENT_LISTEN (--agent-listen)');
      });
      const { describeAddress } = await import('./address');
      const a = running.app.server.address() as { address: string; port: number };
      const open = running.config.token ? 'bearer token required' : 'no token: IPXE_AGENT_TOKEN is not set';
      log(`storage agent on ${describeAddress(a.address, a.port)} (${running.url}; ${open}; disks in ${running.config.diskDir})`);
      return untilSignal('ironlens agent', Promise.resolve(running));
    }
    case 'kind': {
      const [{ startKindPanel }, web, { dataDirFrom }, { join }] = await Promise.all([import('@ironlens/kind'), import('@ironlens/web'), import('./data-dir'), import('node:path')]);
      // The panel keeps its store and cluster files in ironlens' data dir unless told otherwise.
      const kindDir = join(dataDirFrom(env), 'kind');
      const kindEnv = { KIND_K8S_DB: join(kindDir, 'kind.sqlite'), KIND_K8S_CLUSTERS_DIR: join(kindDir, 'clusters'), ...env };
      const running = await startKindPanel(kindEnv, { webDist: web.webDistDir, webBuildCommand: web.WEB_BUILD_COMMAND }).catch((err) => {
        throw withListenHint(err, 'KIND_K8S_WEB_HOST / KIND_K8S_WEB_PORT');
      });
      const { describeAddress } = await import('./address');
      const a = running.app.server.address() as { address: string; port: number };
      const open = running.tokenRequired ? 'bearer token required (KIND_K8S_TOKEN)' : 'API open: no token, KIND_K8S_TOKEN is not set';
      log(`kind panel on ${describeAddress(a.address, a.port)} (${running.url}; ${open})`);
      return untilSignal('ironlens kind', Promise.resolve(running));
    }
    case 'import':
    case 'export': {
      const dir = rest[0];
      if (!dir) {
        process.stderr.write(`ironlens ${cmd}: a directory is needed\n${COMMAND_USAGE[cmd]}`);
        return 2;
      }
      const { transferLayout } = await import('./layout');
      const out = await transferLayout(env, cmd, dir, { replace: parsed.switches.has('--replace'), bmcPasswords: parsed.switches.has('--bmc-passwords') });
      process.stdout.write(`${JSON.stringify(out)}\n`);
      return 0;
    }
    case 'install-service': {
      const [svc, { join }] = await Promise.all([import('./install-service'), import('node:path')]);
      try {
        // Flags only: a data dir in the environment of whoever runs this is not the service's.
        const f = parsed.env;
        const o = svc.serviceOptions(rest[0], { user: f.IRONLENS_SERVICE_USER, dataDir: f.IRONLENS_DATA_DIR, diskDir: f.DISK_DIR, unitDir: f.IRONLENS_SERVICE_UNIT_DIR, envDir: f.IRONLENS_SERVICE_ENV_DIR });
        if (parsed.switches.has('--dry-run')) {
          process.stdout.write(`# ${join(o.unitDir, o.kind === 'serve' ? 'ironlens.service' : 'ironlens-agent.service')}\n${svc.renderUnit(o)}\n# ${join(o.envDir, `${o.kind}.env`)}\n${svc.renderEnvFile(o)}\n${svc.nextSteps(o, false)}`);
          return 0;
        }
        const w = svc.installService(o);
        process.stdout.write(`${w.envKept ? `kept the existing ${w.env} (your settings)\n` : ''}${svc.nextSteps(o, true)}`);
        return 0;
      } catch (err) {
        if (!(err instanceof svc.ServiceError)) throw err;
        process.stderr.write(`ironlens install-service: ${err.message}\n`);
        return 2;
      }
    }
    case 'backup':
    case 'restore': {
      const file = rest[0];
      if (!file) {
        process.stderr.write(`ironlens ${cmd}: a file is needed\n${COMMAND_USAGE[cmd]}`);
        return 2;
      }
      const { BackupError, backupStore, readPassphrase, restoreStore } = await import('./backup');
      try {
        const passphrase = readPassphrase(env.IRONLENS_BACKUP_KEY_FILE);
        if (cmd === 'backup') {
          const out = await backupStore(env, file, passphrase);
          process.stdout.write(`backup written to ${out.file} (${out.bytes} bytes; the secret key from ${out.key}, sealed under the passphrase)\n`);
        } else {
          const out = await restoreStore(env, file, passphrase, { replace: parsed.switches.has('--replace') });
          process.stdout.write(`restored the backup of ${out.created_at} into ${out.dataDir}\n`);
        }
        return 0;
      } catch (err) {
        if (!(err instanceof BackupError)) throw err;
        process.stderr.write(`ironlens ${cmd}: ${err.message}\n`);
        return 1;
      }
    }
    case 'migrate': {
      const [{ ALL_MIGRATIONS, openStore }, { dataDirFrom }] = await Promise.all([import('./serve'), import('./data-dir')]);
      const where = env.IRONLENS_DATABASE_URL ? 'PostgreSQL (IRONLENS_DATABASE_URL)' : dataDirFrom(env);
      if (parsed.switches.has('--status')) {
        const store = await openStore(env, undefined, { migrate: false });
        try {
          const status = await store.migrationStatus(ALL_MIGRATIONS);
          for (const m of status) process.stdout.write(`${m.applied_at ? `applied ${m.applied_at.toISOString()}` : 'pending'}  ${m.name}\n`);
          const pending = status.filter((m) => !m.applied_at).length;
          process.stdout.write(pending ? `${pending} pending migration(s) in ${where}: \`ironlens migrate\` (or the next start) applies them\n` : `store in ${where} is up to date\n`);
        } finally {
          await store.close();
        }
        return 0;
      }
      const store = await openStore(env);
      await store.close();
      process.stdout.write(`store ready in ${where}\n`);
      return 0;
    }
    default:
      process.stderr.write(`unknown command: ${cmd}\n${USAGE}`);
      return 2;
  }
}

/** Runs one command line; resolves to the exit code. */
export async function main(argv: string[]): Promise<number> {
  if (argv[0] === 'master') return masterCommand(argv.slice(1));
  // The API client's commands parse their own options (-o json, --url, --state, …).
  if ((CLIENT_COMMANDS as readonly string[]).includes(argv[0])) {
    const [{ runClient }, { readFileSync }] = await Promise.all([import('./client'), import('node:fs')]);
    return runClient(argv[0] as ClientCommand, argv.slice(1), {
      out: (s) => process.stdout.write(s),
      err: (s) => process.stderr.write(s),
      env: process.env,
      readStdin: () => readFileSync(0, 'utf8'),
      commands: Object.keys(COMMAND_USAGE),
      usage: CLIENT_USAGE,
      verbs: VERBS,
    });
  }
  let parsed: ParsedArgs;
  try {
    parsed = parseArgs(argv);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  const [cmd, ...rest] = parsed.positional;
  if (cmd === undefined || cmd === 'help') {
    const topic = cmd === 'help' ? rest[0] : undefined;
    if (topic && COMMAND_USAGE[topic]) {
      process.stdout.write(COMMAND_USAGE[topic]);
      return 0;
    }
    if (topic) {
      process.stderr.write(`unknown command: ${topic}\n${USAGE}`);
      return 2;
    }
    if (parsed.help || cmd === 'help') {
      process.stdout.write(USAGE);
      return 0;
    }
    process.stderr.write(USAGE);
    return 2;
  }
  const usage = COMMAND_USAGE[cmd];
  if (!usage) {
    process.stderr.write(`unknown command: ${cmd}\n${USAGE}`);
    return 2;
  }
  if (parsed.help) {
    process.stdout.write(usage);
    return 0;
  }
  if (cmd === 'token') {
    // Its own options (--name, --role, --expires, --json); --data-dir is parsed above.
    try {
      const { tokenCommand } = await import('./token');
      const raw = argv.slice(argv.indexOf('token') + 1).filter((a, i, all) => !(a === '--data-dir' || a.startsWith('--data-dir=') || all[i - 1] === '--data-dir'));
      return await tokenCommand(raw, { ...process.env, ...parsed.env }, undefined, usage);
    } catch (err) {
      process.stderr.write(`ironlens token: ${(err as Error).message}\n`);
      return 1;
    }
  }
  const unknown = [...parsed.switches].filter((s) => !(SWITCHES[cmd] ?? []).includes(s));
  if (unknown.length > 0) {
    process.stderr.write(`ironlens ${cmd}: unknown option ${unknown.join(', ')}\n${usage}`);
    return 2;
  }
  try {
    return await run(cmd, rest, parsed, { ...process.env, ...parsed.env });
  } catch (err) {
    process.stderr.write(`ironlens ${cmd}: ${(err as Error).message}\n`);
    return 1;
  }
}

/** `ironlens master build …`: its own options (repeatable ones), parsed here. */
async function masterCommand(argv: string[]): Promise<number> {
  const usage = COMMAND_USAGE.master;
  if (argv.includes('--help') || argv.includes('-h') || argv.length === 0) {
    (argv.length === 0 ? process.stderr : process.stdout).write(usage);
    return argv.length === 0 ? 2 : 0;
  }
  const [sub, ...rest] = argv;
  if (sub !== 'build') {
    process.stderr.write(`ironlens master: unknown subcommand ${sub}\n${usage}`);
    return 2;
  }
  const single: Record<string, string> = {
    '--os': 'os',
    '--disk-dir': 'diskDir',
    '--name': 'name',
    '--size': 'size',
    '--firmware': 'firmware',
    '--control-plane': 'controlPlane',
    '--mirror': 'mirror',
    '--security-mirror': 'securityMirror',
    '--cache-dir': 'cacheDir',
  };
  const opts: Record<string, string> = {};
  const keys: string[] = [];
  const packages: string[] = [];
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i];
    const eq = a.indexOf('=');
    const [name, inline] = a.startsWith('--') && eq > 0 ? [a.slice(0, eq), a.slice(eq + 1)] : [a, undefined];
    const known = single[name] || name === '--authorized-key' || name === '--package';
    if (!known) {
      process.stderr.write(`ironlens master build: unknown argument ${a}\n${usage}`);
      return 2;
    }
    const v = inline ?? rest[++i];
    if (v === undefined) {
      process.stderr.write(`ironlens master build: ${name} needs a value\n${usage}`);
      return 2;
    }
    if (name === '--authorized-key') keys.push(v);
    else if (name === '--package') packages.push(v);
    else opts[single[name]] = v;
  }
  for (const req of ['--os', '--disk-dir']) {
    if (!opts[single[req]]) {
      process.stderr.write(`ironlens master build: ${req} is required\n${usage}`);
      return 2;
    }
  }
  const { buildMaster } = await import('@ironlens/agent/master');
  try {
    const result = await buildMaster({ os: opts.os, diskDir: opts.diskDir, ...opts, authorizedKeys: keys, packages });
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return 0;
  } catch (err) {
    process.stderr.write(`ironlens master build: ${(err as Error).message}\n`);
    return 1;
  }
}
