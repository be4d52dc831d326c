import { createMetalServices, metalConfigFromEnv } from '@ironlens/metal';
import { dataDirFrom, openStore, serve } from './serve';

const USAGE = `usage: ironlens <command> [options]

commands:
  serve                 boot control plane (:4839) and console (:8080)
  agent                 storage agent (:4840), configured by IPXE_AGENT_* and DISK_DIR
  kind                  the kind panel alone, with the seed's exact /api/v1 layout (:8080)
  import DIR [--replace]  load the old file layout (config/, state/, dnsmasq/) into the store
  export DIR            write the store out in that file layout
  migrate               create or upgrade the store, then exit

options (each mirrors an environment variable):
  --data-dir DIR        IRONLENS_DATA_DIR (default ./.ironlens)
  --boot-listen ADDR    IRONLENS_BOOT_LISTEN (host:port | off; default 0.0.0.0:4839)
  --console-listen ADDR IRONLENS_CONSOLE_LISTEN (host:port | off; default 127.0.0.1:8080)
  --agent-listen ADDR   IRONLENS_AGENT_LISTEN (default 0.0.0.0:4840)
`;

const FLAGS: Record<string, string> = {
  '--data-dir': 'IRONLENS_DATA_DIR',
  '--boot-listen': 'IRONLENS_BOOT_LISTEN',
  '--console-listen': 'IRONLENS_CONSOLE_LISTEN',
  '--agent-listen': 'IRONLENS_AGENT_LISTEN',
};

/** Splits argv into positionals and env overrides from the flags above. */
export function parseArgs(argv: string[]): { positional: string[]; env: Record<string, string>; switches: Set<string> } {
  const positional: string[] = [];
  const env: Record<string, string> = {};
  const switches = new Set<string>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const [name, inline] = a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
    if (FLAGS[name]) {
      const v = inline ?? argv[++i];
      if (v === undefined) throw new Error(`${name} needs a value`);
      env[FLAGS[name]] = v;
    } else if (a.startsWith('--')) switches.add(a);
    else positional.push(a);
  }
  return { positional, env, switches };
}

function onSignals(close: () => Promise<void>): Promise<number> {
  return new Promise((resolve) => {
    const stop = async () => {
      await close().catch(() => {});
      resolve(0);
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}

export async function main(argv: string[]): Promise<number> {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs(argv);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  const env = { ...process.env, ...parsed.env };
  const [cmd, ...rest] = parsed.positional;
  try {
    switch (cmd) {
      case 'serve': {
        const running = await serve(env);
        return onSignals(running.close);
      }
      case 'agent': {
        const { startAgent } = await import('@ironlens/agent');
        const running = await startAgent(env);
        return onSignals(running.close);
      }
      case 'kind': {
        const [{ startKindPanel }, web] = await Promise.all([import('@ironlens/kind'), import('@ironlens/web')]);
        const running = await startKindPanel(env, { webDist: web.webDistDir, webBuildCommand: web.WEB_BUILD_COMMAND });
        return onSignals(running.close);
      }
      case 'import':
      case 'export': {
        const dir = rest[0];
        if (!dir) throw new Error(`${cmd} needs a directory`);
        const store = await openStore(env);
        try {
          const metal = createMetalServices({ store, config: metalConfigFromEnv(env, dataDirFrom(env)) });
          const out = cmd === 'import' ? await metal.layout.import(dir, { replace: parsed.switches.has('--replace') }) : await metal.layout.export(dir);
          if (cmd === 'import') await metal.dhcp.sync().catch((err: Error) => process.stderr.write(`[ironlens] warning: ${err.message}\n`));
          process.stdout.write(`${JSON.stringify(out)}\n`);
        } finally {
          await store.close();
        }
        return 0;
      }
      case 'migrate': {
        const store = await openStore(env);
        await store.close();
        process.stdout.write(`store ready in ${dataDirFrom(env)}\n`);
        return 0;
      }
      case undefined:
      case 'help':
      case '--help':
        process.stdout.write(USAGE);
        return cmd ? 0 : 2;
      default:
        process.stderr.write(`unknown command: ${cmd}\n${USAGE}`);
        return 2;
    }
  } catch (err) {
    process.stderr.write(`ironlens ${cmd}: ${(err as Error).message}\n`);
    return 1;
  }
}
