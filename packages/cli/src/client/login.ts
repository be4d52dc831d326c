/**
 * The saved login of `ironlens login`: `$XDG_CONFIG_HOME/ironlens/cli.json` (default
 * `~/.config/ironlens/cli.json`, mode 0600) holds one URL and the token for it. The token is bound
 * to that URL's origin: a command pointed at another ironlens (`--url`, `IRONLENS_URL`) does not
 * send it there, and says why when that ironlens asks for a token. A file that cannot be read or is
 * not a saved login stops the command with what is wrong with which file: it is never taken for
 * "not logged in".
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { replaceFileSync } from '@ironlens/core/fs';
import { Type } from '@sinclair/typebox';
import { mismatch } from './check';
import { ClientError, UsageError } from './errors';

/** The URL of a command given no `--url`, no `IRONLENS_URL` and no saved login: the console listener's default. */
export const DEFAULT_URL = 'http://127.0.0.1:8080';

const SavedLogin = Type.Object({ url: Type.Optional(Type.String()), token: Type.Optional(Type.String()) });
interface SavedLogin {
  url?: string;
  token?: string;
}

/** A saved login that cannot be used (unreadable, not JSON, not a login): exit 1 with this message. */
export class LoginFileError extends ClientError {}

export function configFile(env: NodeJS.ProcessEnv): string {
  const xdg = env.XDG_CONFIG_HOME;
  return join(xdg && isAbsolute(xdg) ? xdg : join(env.HOME || homedir(), '.config'), 'ironlens', 'cli.json');
}

const FIX = '`ironlens logout` removes it, then `ironlens login` saves a new one';

/** The saved login; `{}` when there is none. Throws {@link LoginFileError} for a file it cannot use. */
export function readSaved(env: NodeJS.ProcessEnv): SavedLogin {
  const f = configFile(env);
  let text: string;
  try {
    text = readFileSync(f, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new LoginFileError(`cannot read the saved login ${f}: ${(err as Error).message}`);
  }
  let saved: unknown;
  try {
    saved = JSON.parse(text);
  } catch (err) {
    throw new LoginFileError(`the saved login ${f} is not valid JSON (${(err as Error).message}): fix it, or ${FIX}`);
  }
  const why = mismatch(SavedLogin, saved);
  if (why) throw new LoginFileError(`the saved login ${f} is not a login ({"url": …, "token": …}; ${why}): fix it, or ${FIX}`);
  return saved as SavedLogin;
}

/** Saves `url` and its `token` (0600, in a 0700 directory, replaced in one rename through an exclusive temporary); the file's path. */
export function saveLogin(env: NodeJS.ProcessEnv, url: string, token: string): string {
  const f = configFile(env);
  mkdirSync(dirname(f), { recursive: true, mode: 0o700 });
  replaceFileSync(f, `${JSON.stringify({ url, token })}\n`, 0o600);
  return f;
}

/** Forgets the saved login (whatever the file held); the file's path. */
export function forgetLogin(env: NodeJS.ProcessEnv): string {
  const f = configFile(env);
  if (existsSync(f)) replaceFileSync(f, '{}\n', 0o600);
  return f;
}

/** An http(s) URL, or a usage error's message. */
export function checkUrl(url: string): string | undefined {
  if (!/^https?:\/\/[^\s/]+/.test(url)) return `--url must be an http(s) URL, got ${JSON.stringify(url)}`;
  try {
    new URL(url);
  } catch {
    return `--url must be an http(s) URL, got ${JSON.stringify(url)}`;
  }
  return undefined;
}

const origin = (url: string) => new URL(url).origin;

/** Where a command talks to, and with which token. */
export interface Session {
  url: string;
  token?: string;
  /** Why no token is sent although one is saved (the saved one is another URL's): said when the API asks for one. */
  hint?: string;
}

/**
 * The URL (`--url`, else `IRONLENS_URL`, else the saved one, else {@link DEFAULT_URL}) and the
 * token: `IRONLENS_TOKEN`, else the saved token when the URL has the saved URL's origin. The saved
 * login is read only when the flags and environment leave something to take from it.
 */
export function session(env: NodeJS.ProcessEnv, urlFlag: string | undefined): Session {
  const given = urlFlag || env.IRONLENS_URL;
  const envToken = env.IRONLENS_TOKEN || undefined;
  const saved = given && envToken ? {} : readSaved(env);
  const url = given || saved.url || DEFAULT_URL;
  const bad = checkUrl(url);
  if (bad) throw new UsageError(bad);
  if (envToken) return { url, token: envToken };
  if (!saved.token) return { url };
  if (saved.url && checkUrl(saved.url) === undefined && origin(saved.url) === origin(url)) return { url, token: saved.token };
  const to = saved.url ? `for ${saved.url}` : 'without its URL';
  return { url, hint: `the token \`ironlens login\` saved is ${to}, and is sent nowhere else: \`ironlens login --url ${url}\` saves one for ${url} (or set IRONLENS_TOKEN)` };
}
