/**
 * The day-to-day commands (issue 23): `ironlens devices|workers|disks|agents|clusters|jobs|
 * operations …`, a client of a running ironlens over its HTTP API, on either listener
 * (`./transport.ts`), with the URL and token of `./login.ts`.
 *
 * The runner: it parses the command line, checks the verb, its words and its options against
 * the verb's handler (`./verbs`), runs it, and writes everything through `printable`
 * (`./output.ts`), so no verb can print a server's terminal controls raw. Exit codes: 0; 1 when
 * the API refused (its status and code printed), could not be reached or answered outside its
 * schema, or the saved login cannot be read; 2 on a usage error (with the command's usage).
 */
import { ApiError } from '@ironlens/core/http-client';
import type { ClientCommand, ClientGroup } from '../vocabulary';
import type { Api } from './api';
import type { ClientIo, VerbContext, VerbHandler } from './context';
import { ClientError, UsageError } from './errors';
import type { Session } from './login';
import { details, printable, table } from './output';

export type { ClientIo, ClientVocabulary } from './context';

interface Parsed {
  pos: string[];
  opts: Record<string, string>;
  flags: Set<string>;
}

/**
 * Options anywhere on the line: `--name value`, `--name=value`, `--switch`, `-o json` (`--help`
 * is answered before); the rest are positionals. `valued` and `switches` are every option any verb of the command takes (each
 * verb's own are checked once the verb is known).
 */
function parse(argv: string[], valued: Set<string>, switches: Set<string>): Parsed {
  const pos: string[] = [];
  const opts: Record<string, string> = {};
  const flags = new Set<string>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '-o' || a === '--output' || a.startsWith('--output=')) {
      const v = a.includes('=') ? a.slice(a.indexOf('=') + 1) : argv[++i];
      if (v !== 'json' && v !== 'table') throw new UsageError(`-o takes json or table, got ${JSON.stringify(v ?? '')}`);
      opts.output = v;
    } else if (a.startsWith('--')) {
      const [name, inline] = a.includes('=') ? [a.slice(2, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a.slice(2), undefined];
      if (name === 'url' || valued.has(name)) {
        const v = inline ?? argv[++i];
        if (v === undefined) throw new UsageError(`--${name} needs a value`);
        opts[name] = v;
      } else if (switches.has(name) && inline === undefined) flags.add(name);
      else throw new UsageError(`unknown option ${a}`);
    } else if (a.startsWith('-') && a !== '-') throw new UsageError(`unknown option ${a}`);
    else pos.push(a);
  }
  return { pos, opts, flags };
}

/** Runs one client command line; resolves to the exit code. */
export async function runClient(cmd: ClientCommand, argv: string[], io: ClientIo): Promise<number> {
  // The one place output is written: whatever a verb prints, from the server or not, is made printable here.
  const out = (s: string): void => {
    io.out(printable(s));
  };
  const err = (s: string): void => {
    io.err(printable(s));
  };
  const group: ClientGroup = io.vocabulary.client[cmd];
  // `--help` answers from the vocabulary alone: the verbs, the API's schemas and TypeBox load after it.
  if (argv.includes('--help') || argv.includes('-h')) {
    out(group.usage);
    return 0;
  }
  let session: Session | undefined;
  try {
    const [{ HANDLERS }, { createApi }, { session: resolveSession }, { Transport }] = await Promise.all([import('./verbs'), import('./api'), import('./login'), import('./transport')]);
    const handlers: Readonly<Record<string, VerbHandler>> = HANDLERS[cmd];
    const all = Object.values(handlers);
    const { pos, opts, flags } = parse(argv, new Set(all.flatMap((h) => h.options ?? [])), new Set(all.flatMap((h) => h.switches ?? [])));
    const verb = group.verbs.length === 0 ? '' : (pos[0] ?? group.defaultVerb);
    if (verb === undefined) throw new UsageError(`a verb is needed: ${group.verbs.join(', ')}`);
    const handler = (verb === '' || group.verbs.includes(verb)) && Object.hasOwn(handlers, verb) ? handlers[verb] : undefined;
    if (!handler) throw new UsageError(`unknown verb ${JSON.stringify(verb)}: ${group.verbs.join(', ')}`);
    const name = verb ? `${cmd} ${verb}` : cmd;
    for (const o of Object.keys(opts)) if (o !== 'url' && o !== 'output' && !handler.options?.includes(o)) throw new UsageError(`${name} takes no --${o}`);
    for (const f of flags) if (!handler.switches?.includes(f)) throw new UsageError(`${name} takes no --${f}`);
    const args = verb === '' || pos.length === 0 ? pos : pos.slice(1);
    if (args.length !== (handler.args ?? 0)) throw new UsageError(`${name} takes ${handler.takes ?? 'no arguments'}`);
    const json = opts.output === 'json';
    let api: Api | undefined;
    const print = (value: unknown, render: () => string) => {
      out(json ? `${JSON.stringify(value, null, 2)}\n` : render());
    };
    const ctx: VerbContext = {
      cmd,
      verb,
      args,
      opts,
      flags,
      json,
      io,
      out,
      err,
      print,
      one: (value) => {
        print(value, () => details(value));
        return 0;
      },
      table: (answer, rows, columns) => {
        print(answer, () => table(rows, columns));
        return 0;
      },
      api: () => {
        if (!api) {
          session = resolveSession(io.env, opts.url);
          api = createApi(new Transport(session.url, session.token, io.fetch));
        }
        return api;
      },
    };
    return await handler.run(ctx);
  } catch (e) {
    if (e instanceof UsageError) {
      err(`ironlens ${cmd}: ${e.message}\n${group.usage}`);
      return 2;
    }
    if (e instanceof ApiError) {
      const hint = e.status === 401 && session?.hint ? ` (${session.hint})` : '';
      err(`ironlens ${cmd}: ${e.status ? `${e.status} ` : ''}${e.code ?? 'error'}: ${e.message}${hint}\n`);
      return 1;
    }
    if (e instanceof ClientError) {
      err(`ironlens ${cmd}: ${e.message}\n`);
      return 1;
    }
    throw e;
  }
}
