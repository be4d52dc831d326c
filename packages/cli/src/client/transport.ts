/**
 * The client commands' HTTP: one ironlens at one URL, reached on either of its listeners.
 *
 * - The console listener (default `http://127.0.0.1:8080`) serves the provisioning API (seed 004)
 *   under `/api/metal` and the cluster manager (seed 000) at its own paths.
 * - The provisioning listener (`:4839`, the address seed-004 users know) serves seed 004 at its
 *   own paths (the console's minus `/api/metal`) and no cluster manager.
 *
 * Which one a URL is, is asked once per URL and process: `GET /api/metal/healthz`, which only the
 * console listener serves, without a token (it is public there; the provisioning listener answers
 * it 404, or 401 once it has a token, as it answers every path it does not know). A cluster call
 * to the provisioning listener stops with which listener serves it, instead of a 404.
 *
 * Every answer is checked against its call's schema (`./check.ts`): what the schema does not allow
 * stops the command with where it differs, never reaches a verb as a wrong shape.
 */
import { readAnswer, query, unreachable } from '@ironlens/core/http-client';
import type { Static, TSchema } from '@sinclair/typebox';
import { mismatch } from './check';
import { ClientError } from './errors';

/** The API a call belongs to, which decides its path on each listener. */
export type ApiName = 'metal' | 'cluster' | 'auth';

/** One API call: where it goes and what it answers. */
export interface Call<S extends TSchema = TSchema> {
  /** `metal`: seed 004 (under `/api/metal` on the console listener); `cluster`: the console listener only; `auth`: both, same path. */
  api: ApiName;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** The route as its API's OpenAPI document names it (`/devices/{mac}`). */
  route: string;
  /** The status of success. */
  status: number;
  /** The schema of the success answer: the route's own, from the API packages' `/api` entries. */
  answer: S;
}

export interface CallArgs {
  /** The route's `{name}` parameters (percent-encoded here). */
  params?: Record<string, string>;
  query?: Record<string, string | number | boolean | null | undefined>;
  body?: unknown;
}

export type Listener = 'console' | 'provisioning';

/** Each URL's listener, asked once per process. */
const listeners = new Map<string, Promise<Listener>>();

const TIMEOUT_MS = 60_000;

export class Transport {
  constructor(
    readonly url: string,
    private readonly token: string | undefined,
    private readonly fetchImpl: typeof fetch = fetch,
  ) {}

  private async send(method: string, path: string, body: unknown, token: string | undefined): Promise<Response> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (token) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    try {
      return await this.fetchImpl(new URL(path, this.url), { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(TIMEOUT_MS) });
    } catch (err) {
      throw unreachable(`cannot reach ${this.url}`, err);
    }
  }

  /** Which listener the URL is (see the module comment); asked once per URL. */
  listener(): Promise<Listener> {
    let known = listeners.get(this.url);
    if (!known) {
      known = this.send('GET', '/api/metal/healthz', undefined, undefined).then((res) => {
        void res.body?.cancel();
        // 403: a console that refuses to proxy (console_token_required) is still the console.
        return res.ok || res.status === 403 ? 'console' : 'provisioning';
      });
      listeners.set(this.url, known);
      known.catch(() => listeners.delete(this.url));
    }
    return known;
  }

  /** The path of a call on this URL's listener. */
  private async path(c: Call, args: CallArgs): Promise<string> {
    const route = c.route.replace(/\{(\w+)\}/g, (_, name: string) => {
      const v = args.params?.[name];
      if (v === undefined) throw new Error(`${c.method} ${c.route}: no value for {${name}}`);
      return encodeURIComponent(v);
    });
    const path = `${route}${query(args.query ?? {})}`;
    if (c.api === 'auth') return path;
    const listener = await this.listener();
    if (c.api === 'metal') return listener === 'console' ? `/api/metal${path}` : path;
    if (listener === 'provisioning') {
      throw new ClientError(
        `${this.url} is the provisioning listener of ironlens serve (seed 004: devices, workers, disks, agents, operations, rollouts); the cluster manager (${c.route}) is served by its console listener: --url (or IRONLENS_URL) with the console's address, IRONLENS_CONSOLE_LISTEN of that serve (default 127.0.0.1:8080, on its own machine)`,
      );
    }
    return path;
  }

  /** Sends one call; its answer, checked against the call's schema. */
  async call<S extends TSchema>(c: Call<S>, args: CallArgs = {}): Promise<Static<S>> {
    const path = await this.path(c, args);
    const answer = await readAnswer(await this.send(c.method, path, args.body, this.token));
    const why = mismatch(c.answer, answer);
    if (why) throw new ClientError(`${c.method} ${path} answered what its schema does not allow (at ${why}): is ${this.url} an ironlens of another version?`);
    return answer as Static<S>;
  }
}
