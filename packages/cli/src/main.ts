/**
 * The `ironlens` command line. This module stays light on purpose: it holds the argument parser
 * (the usage texts are `./vocabulary.ts`, bundled with it), and loads a subcommand's modules
 * (`import()`) only when that subcommand runs, so `ironlens --help` costs little more than Node
 * starting (the compiled bundle splits each of these imports into chunks of its own).
 */
import type { Env } from '@ironlens/core';
import { CLIENT, COMMAND_USAGE, isClientCommand, USAGE } from './vocabulary';

export { COMMAND_USAGE };

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
const SWITCHES: Record<string, string[]> = { import: ['--replace'], export: ['--bmc-passwords'], restore: ['--replace'], migrate: ['--status'], 'install-service': ['--dry-run', '--boot-services'] };

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
        const o = svc.serviceOptions(rest[0], { user: f.IRONLENS_SERVICE_USER, dataDir: f.IRONLENS_DATA_DIR, diskDir: f.DISK_DIR, unitDir: f.IRONLENS_SERVICE_UNIT_DIR, envDir: f.IRONLENS_SERVICE_ENV_DIR }, { bootServices: parsed.switches.has('--boot-services') });
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
  if (isClientCommand(argv[0])) {
    const [{ runClient }, { readFileSync }] = await Promise.all([import('./client'), import('node:fs')]);
    return runClient(argv[0], argv.slice(1), {
      out: (s) => process.stdout.write(s),
      err: (s) => process.stderr.write(s),
      env: process.env,
      readStdin: () => readFileSync(0, 'utf8'),
      vocabulary: { client: CLIENT, commands: Object.keys(COMMAND_USAGE) },
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
