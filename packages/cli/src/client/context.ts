/**
 * What a verb's handler is given and what it declares. A handler takes its words and options
 * from the runner (`./index.ts`, which checks their number and names first), calls the API through
 * `ctx.api()` and prints through `ctx.print`/`ctx.out`, which make every byte printable
 * (`./output.ts`).
 */
import type { CLIENT, ClientCommand, VerbOf } from '../vocabulary';
import type { Api } from './api';
import type { Column } from './output';

/** The client's vocabulary, handed in by main (see `../vocabulary.ts`). */
export interface ClientVocabulary {
  client: typeof CLIENT;
  /** Every command of `ironlens`, for the completion script. */
  commands: string[];
}

export interface ClientIo {
  out: (s: string) => void;
  err: (s: string) => void;
  env: NodeJS.ProcessEnv;
  readStdin: () => string;
  fetch?: typeof fetch;
  /** Poll interval of `jobs watch`. Default is 1000 ms. */
  pollMs?: number;
  vocabulary: ClientVocabulary;
}

export interface VerbContext {
  cmd: ClientCommand;
  verb: string;
  /** The words after the verb (as many as the handler's `args`). */
  args: string[];
  /** Options with a value, by name without `--` (`state`, `url`, `output`). */
  opts: Record<string, string>;
  /** Switches given, by name without `--` (`force`). */
  flags: Set<string>;
  /** `-o json`: the API's JSON instead of a table. */
  json: boolean;
  io: ClientIo;
  /** Writes text to standard output (made printable). */
  out: (s: string) => void;
  /** Writes text to standard error (made printable). */
  err: (s: string) => void;
  /** The API's JSON with `-o json`, else what `render` makes of it. */
  print: (value: unknown, render: () => string) => void;
  /** One object: the API's JSON with `-o json`, else `key  value` lines; exit code 0. */
  one: (value: object) => number;
  /** An answer whose `rows` make a table of `columns` (the answer itself with `-o json`); exit code 0. */
  table: <R>(answer: unknown, rows: readonly R[], columns: ReadonlyArray<Column<R>>) => number;
  /** The typed API of the ironlens this command talks to; the first use resolves URL and token (flags, environment, saved login). */
  api: () => Api;
}

export interface VerbHandler {
  /** How many words the verb takes. Default is 0. */
  args?: number;
  /** How a usage error names them ("a MAC and a worker id"). Default is "no arguments". */
  takes?: string;
  /** Its options with a value (`state` for `--state S`), besides `--url` and `-o`. */
  options?: readonly string[];
  /** Its switches (`force` for `--force`). */
  switches?: readonly string[];
  /** Runs the verb; its exit code. */
  run: (ctx: VerbContext) => Promise<number> | number;
}

/** The handlers of one command, one per verb of its vocabulary; a command without verbs has one, under `''`. */
export type VerbHandlers<C extends ClientCommand> = { readonly [V in [VerbOf<C>] extends [never] ? '' : VerbOf<C>]: VerbHandler };
