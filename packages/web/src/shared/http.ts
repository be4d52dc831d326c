/**
 * The HTTP client of the console and the kind page: bearer token from `ConsoleToken`, every API
 * error turned into its message. Reading answers and errors is `@ironlens/core/http-client`, which
 * the `ironlens` command's client shares (isomorphic, no server code).
 */
import { readAnswer, unreachable } from '@ironlens/core/http-client';

export { ApiError, errorText, query } from '@ironlens/core/http-client';

/** How the client authenticates: the token to send, and where a 401 is reported. */
export interface ApiAuth {
  get(): string | null;
  unauthorized(sent: string | null): void;
}

export interface Http {
  base: string;
  call<T>(method: string, path: string, body?: unknown): Promise<T>;
  blob(method: string, path: string, body?: unknown): Promise<Blob>;
  /** A multipart form (the browser sets its boundary). */
  form<T>(method: string, path: string, body: FormData): Promise<T>;
}

/** Which page the client serves: named in the browser-write header and in the "cannot be reached" message. */
export interface HttpClientOptions {
  client?: 'console' | 'kind';
}

const NO_AUTH: ApiAuth = { get: () => null, unauthorized: () => {} };

export function createHttp(base: string, auth: ApiAuth = NO_AUTH, opts: HttpClientOptions = {}): Http {
  const root = base.replace(/\/$/, '');
  const client = opts.client ?? 'console';
  const what = client === 'kind' ? 'the kind panel' : 'the console';
  async function send(method: string, path: string, body?: unknown): Promise<Response> {
    const token = auth.get();
    const headers: Record<string, string> = { accept: 'application/json' };
    const isForm = typeof FormData !== 'undefined' && body instanceof FormData;
    if (body !== undefined && !isForm) headers['content-type'] = 'application/json';
    if (token) headers.authorization = `Bearer ${token}`;
    // The listener refuses browser writes with a form body (multipart here) without it: an HTML form of another site cannot send it.
    if (method !== 'GET' && method !== 'HEAD') headers['x-ironlens-request'] = client;
    let res: Response;
    try {
      res = await fetch(`${root}${path}`, { method, headers, body: body === undefined ? undefined : isForm ? body : JSON.stringify(body), cache: 'no-store' });
    } catch (err) {
      throw unreachable(`${what} cannot be reached`, err);
    }
    if (res.status === 401) auth.unauthorized(token);
    return res;
  }
  async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
    return (await readAnswer(await send(method, path, body))) as T;
  }
  return {
    base: root,
    call,
    form: <T,>(method: string, path: string, body: FormData) => call<T>(method, path, body),
    async blob(method: string, path: string, body?: unknown): Promise<Blob> {
      const res = await send(method, path, body);
      if (!res.ok) await readAnswer(res); // throws its ApiError
      return res.blob();
    },
  };
}

/** Saves a Blob as a file through an object URL (the browser's download, with a name). */
export function saveBlob(blob: Blob, filename: string): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  a.style.display = 'none';
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
