/**
 * The \`ironlens\` command's vocabulary: every command, the API client's commands and their verbs,
 * and each one's usage text. It imports nothing, and only \`main.ts\` imports it (its bundle entry
 * holds it, so \`ironlens --help\` loads nothing else); the client's chunk is handed the table by
 * main and takes only its types from here.
 */
const LISTEN_HINT = 'host:port | off';

export const USAGE = `usage: ironlens <command> [options]
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
  rollouts                list, show, create, pause, resume, abort (a new master across workers)
  login                   save the URL and a token (from standard input) for these commands
  logout                  forget them
  completion              a bash or zsh completion script
  migrate [--status]      create or upgrade the store, then exit (--status: say what would run)
  install-service [serve|agent] [--boot-services] [--dry-run]
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

const CLIENT_OPTIONS = `options of every client command:
  --url URL       the ironlens to talk to (IRONLENS_URL; else the one \`ironlens login\` saved;
                  default http://127.0.0.1:8080): its console listener, or its provisioning
                  listener (:4839; devices, workers, disks, agents, operations and rollouts only)
  -o json         the API's JSON instead of a table
  IRONLENS_TOKEN  the bearer token (else the one \`ironlens login\` saved, for its URL only)
exit codes: 0 done; 1 the API refused (its status and code are printed), could not be reached or
answered what its schema does not allow, or the saved login cannot be read; 2 usage error
`;

/** A client command: its verbs (the word after the command) and its usage text. */
export interface ClientGroup {
  /** The verbs, in the order the usage and the completion list them; none for a command that takes none. */
  readonly verbs: readonly string[];
  /** The verb that runs when none is given. Default is none: a verb is needed. */
  readonly defaultVerb?: string;
  /** What \`ironlens <command> --help\` prints. */
  readonly usage: string;
}

/**
 * The API client's commands (run by \`./client\`; each verb's handler is in \`./client/verbs\`,
 * which the compiler holds to this table: a verb here without a handler there fails \`npm run check\`).
 */
export const CLIENT = {
  devices: {
    verbs: ['list', 'show', 'create', 'revoke', 'bind', 'unbind', 'power'],
    usage: `usage: ironlens devices list [--state pooled|bound|revoked] | show MAC | create MAC | revoke MAC
                        | bind MAC WORKER [--force] | unbind MAC
                        | power MAC on|off|cycle|soft-off [--network]   (BMC power, where configured)

The device pool (seed 004): list, one device, declare, revoke, bind to a worker, unbind.
${CLIENT_OPTIONS}`,
  },
  workers: {
    verbs: ['list', 'show', 'create', 'delete'],
    usage: `usage: ironlens workers list | show ID | create ID [--mac MAC] [--hostname NAME] | delete ID [--delete-disk]

Workers: list, one worker, create (bound to a pooled device with --mac), delete.
${CLIENT_OPTIONS}`,
  },
  disks: {
    verbs: ['list', 'create', 'delete'],
    usage: `usage: ironlens disks list WORKER | create WORKER --os OS [--master NAME] [--size SIZE] [--agent ID]
                     | delete WORKER OS [--delete-file]

A worker's system disks: cloned from a master image (--master; see GET /masters) or empty (--size).
${CLIENT_OPTIONS}`,
  },
  agents: {
    verbs: ['list', 'show'],
    usage: `usage: ironlens agents list | show ID

The storage agents and their health.
${CLIENT_OPTIONS}`,
  },
  clusters: {
    verbs: ['list', 'show'],
    usage: `usage: ironlens clusters list [--drafts] | show ID

Registered Kubernetes clusters (the cluster manager, on the console listener); --drafts lists
drafts too. show takes a cluster's id or name.
${CLIENT_OPTIONS}`,
  },
  jobs: {
    verbs: ['list', 'show', 'watch'],
    usage: `usage: ironlens jobs list | show ID | watch ID

Bootstrap jobs (Kubespray, on the console listener): list, one job, or follow one with a progress
bar through its phases until it ends (exit 0 when it succeeded, 1 when it failed or was cancelled).
${CLIENT_OPTIONS}`,
  },
  rollouts: {
    verbs: ['list', 'show', 'create', 'pause', 'resume', 'abort'],
    usage: `usage: ironlens rollouts list | show ID
                        | create --master NAME --max-unavailable N|P% (--workers ID,ID… | --prefix P)
                                 [--boot-timeout S] [--drain-timeout S]
                        | pause ID | resume ID [--no-retry] | abort ID

Rollouts of a new master image across running workers (issue 31), batch by batch: drain,
re-clone beside the old disk, power-cycle with a one-time network boot, prove the boot, re-admit;
a worker that fails is rolled back and the rollout pauses. show lists each worker's phase and last
step; resume retries the workers the pause rolled back (--no-retry leaves them on their old
image); abort rolls back the batch in flight.
${CLIENT_OPTIONS}`,
  },
  operations: {
    verbs: ['list'],
    defaultVerb: 'list',
    usage: `usage: ironlens operations [list] [--limit N] [--mac MAC]

The operations log, newest last.
${CLIENT_OPTIONS}`,
  },
  login: {
    verbs: [],
    usage: `usage: ironlens login [--url URL]

Saves the URL and a token (read from standard input, first line; never an argument) into
$XDG_CONFIG_HOME/ironlens/cli.json (default ~/.config/ironlens/cli.json, mode 0600), checked
against the API first. The token is sent to that URL only (its scheme, host and port): a command
given another --url or IRONLENS_URL does not send it.
`,
  },
  logout: {
    verbs: [],
    usage: `usage: ironlens logout

Forgets the saved URL and token.
`,
  },
  completion: {
    verbs: ['bash', 'zsh'],
    usage: `usage: ironlens completion bash|zsh

Prints a completion script: \`source <(ironlens completion bash)\`, or for zsh
\`ironlens completion zsh > "\${fpath[1]}/_ironlens"\`.
`,
  },
} as const satisfies Record<string, ClientGroup>;

export type ClientCommand = keyof typeof CLIENT;
/** A client command's verbs. */
export type VerbOf<C extends ClientCommand> = (typeof CLIENT)[C]['verbs'][number];

/** Is \`word\` a client command? */
export const isClientCommand = (word: string | undefined): word is ClientCommand => word !== undefined && Object.hasOwn(CLIENT, word);

/** Each command's own usage: what `ironlens <command> --help` prints. */
export const COMMAND_USAGE: Record<string, string> = {
  ...Object.fromEntries(Object.entries(CLIENT).map(([cmd, g]) => [cmd, g.usage])),
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
                        [--disk-dir DIR] [--unit-dir DIR] [--env-dir DIR] [--boot-services] [--dry-run]

Writes a hardened systemd unit (ironlens.service for serve, ironlens-agent.service for the agent)
into --unit-dir (default /etc/systemd/system) and an environment file <env-dir>/<serve|agent>.env
(default /etc/ironlens, mode 0600, never overwritten) with every setting commented and its default,
then says what to run next. --dry-run prints both instead of writing them.

  --user USER      the user serve runs as (default ironlens; created by you, as printed)
  --data-dir DIR   serve's data dir (default /var/lib/ironlens, the unit's StateDirectory)
  --disk-dir DIR   the agent's DISK_DIR (default /home/iscsi_img)
  --boot-services  serve runs its own dnsmasq (IRONLENS_BOOT_SERVICES): the unit grants it
                   CAP_NET_BIND_SERVICE, CAP_NET_ADMIN and CAP_NET_RAW, passed on to dnsmasq
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
