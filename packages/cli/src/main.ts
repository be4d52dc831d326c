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
  migrate                 create or upgrade the store, then exit

options (each mirrors an environment variable):
  --data-dir DIR          IRONLENS_DATA_DIR (default ./.ironlens)
  --boot-listen ADDR      IRONLENS_BOOT_LISTEN (${LISTEN_HINT}; default 0.0.0.0:4839)
  --console-listen ADDR   IRONLENS_CONSOLE_LISTEN (${LISTEN_HINT}; default 127.0.0.1:8080)
  --agent-listen ADDR     IRONLENS_AGENT_LISTEN (default 0.0.0.0:4840)
  -h, --help              this text
`;

/** Each command's own usage: what `ironlens <command> --help` prints. */
export const COMMAND_USAGE: Record<string, string> = {
  serve: `usage: ironlens serve [--data-dir DIR] [--boot-listen ADDR] [--console-listen ADDR]

Runs the boot control plane and the console until SIGINT or SIGTERM.

  --boot-listen ADDR     IRONLENS_BOOT_LISTEN: the provisioning listener (seed 004's API, iPXE
                         boot vars). ${LISTEN_HINT}; default 0.0.0.0:4839, every interface.
  --console-listen ADDR  IRONLENS_CONSOLE_LISTEN: the console (kind panel under /kind, docs).
                         ${LISTEN_HINT}; default 127.0.0.1:8080, this machine only.
  --data-dir DIR         IRONLENS_DATA_DIR: the store and rendered files (default ./.ironlens).

  IPXE_CP_TOKEN            bearer token of the provisioning API (unset: open, with a warning)
  IRONLENS_CONSOLE_TOKEN   bearer token of the console's kind API (unset: open)
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
  KIND_K8S_DB         its store (default ./.data/kind.sqlite)
  KIND_K8S_*          the other settings, in docs/kind.md
`,
  import: `usage: ironlens import DIR [--replace] [--data-dir DIR]

Loads the old file layout (config/agents.yml, state/workers.yml, state/devices.yml,
state/settings.json, state/operations.jsonl, dnsmasq/dhcp-hosts.conf) from DIR into the store,
then re-renders dhcp-hosts.conf. Refuses a store that already has an operations log unless
--replace is given.
`,
  export: `usage: ironlens export DIR [--data-dir DIR]

Writes the store out in the old file layout under DIR.
`,
  migrate: `usage: ironlens migrate [--data-dir DIR]

Creates or upgrades the store in IRONLENS_DATA_DIR (default ./.ironlens), then exits.
`,
};

const FLAGS: Record<string, string> = {
  '--data-dir': 'IRONLENS_DATA_DIR',
  '--boot-listen': 'IRONLENS_BOOT_LISTEN',
  '--console-listen': 'IRONLENS_CONSOLE_LISTEN',
  '--agent-listen': 'IRONLENS_AGENT_LISTEN',
};

/** Switches (no value) each command accepts, besides `--help`/`-h`. */
const SWITCHES: Record<string, string[]> = { import: ['--replace'] };

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
      const [{ startKindPanel }, web] = await Promise.all([import('@ironlens/kind'), import('@ironlens/web')]);
      const running = await startKindPanel(env, { webDist: web.webDistDir, webBuildCommand: web.WEB_BUILD_COMMAND }).catch((err) => {
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
      const out = await transferLayout(env, cmd, dir, { replace: parsed.switches.has('--replace') });
      process.stdout.write(`${JSON.stringify(out)}\n`);
      return 0;
    }
    case 'migrate': {
      const { dataDirFrom, openStore } = await import('./serve');
      const store = await openStore(env);
      await store.close();
      process.stdout.write(`store ready in ${dataDirFrom(env)}\n`);
      return 0;
    }
    default:
      process.stderr.write(`unknown command: ${cmd}\n${USAGE}`);
      return 2;
  }
}

/** Runs one command line; resolves to the exit code. */
export async function main(argv: string[]): Promise<number> {
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
