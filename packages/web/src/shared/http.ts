/** The HTTP client of the console and the kind page: bearer token from `ConsoleToken`, every API error turned into its message. */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** The API's stable code when it sends one (seed 000's `code`). */
    readonly code?: string,
  ) {
    super(message);
  }
}

/** How the client authenticates: the token to send, and where a 401 is reported. */
export interface ApiAuth {
  get(): string | null;
  unauthorized(sent: string | null): void;
}

/**
 * The message of an error body, in each API's own shape: FastAPI's `detail` (a string or
 * `[{loc, msg}]`), seed 004's `{"agent", "error"}`, seed 000's `{code, message}` or a problem
 * document (`title`, `detail`).
 */
export function errorText(body: unknown, status: number): string {
  if (!body || typeof body !== 'object') return typeof body === 'string' && body.trim() ? body.trim().slice(0, 500) : `HTTP ${status}`;
  const b = body as Record<string, unknown>;
  // 403 permission_denied (issue 20), in either shape: who the token is and what it may not do.
  if (status === 403 && typeof b.permission === 'string' && typeof b.actor === 'string' && typeof b.role === 'string') return `your token (${b.actor}, ${b.role}) may not ${b.permission}`;
  if (typeof b.agent === 'string' && b.error !== undefined) return `agent ${b.agent}: ${typeof b.error === 'string' ? b.error : JSON.stringify(b.error)}`;
  const d = b.detail;
  if (typeof d === 'string') return d;
  if (Array.isArray(d))
    return d
      .map((e: { loc?: unknown[]; msg?: string }) => `${(Array.isArray(e?.loc) ? e.loc : []).slice(1).join('.') || 'body'}: ${e?.msg ?? 'invalid'}`)
      .join('; ');
  if (typeof b.message === 'string') return b.message;
  if (typeof b.title === 'string') return b.title;
  if (typeof b.error === 'string') return b.error;
  return `HTTP ${status}`;
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
      throw new ApiError(0, `${what} cannot be reached: ${(err as Error).message}`);
    }
    if (res.status === 401) auth.unauthorized(token);
    return res;
  }
  async function failure(res: Response): Promise<ApiError> {
    const text = await res.text().catch(() => '');
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: the text itself is the message
    }
    const code = parsed && typeof parsed === 'object' && typeof (parsed as { code?: unknown }).code === 'string' ? (parsed as { code: string }).code : undefined;
    return new ApiError(res.status, errorText(parsed, res.status), code);
  }
  async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await send(method, path, body);
    if (!res.ok) throw await failure(res);
    const text = await res.text();
    if (!text) return null as T;
    try {
      return JSON.parse(text) as T;
    } catch {
      return text as T;
    }
  }
  return {
    base: root,
    call,
    form: <T,>(method: string, path: string, body: FormData) => call<T>(method, path, body),
    async blob(method: string, path: string, body?: unknown): Promise<Blob> {
      const res = await send(method, path, body);
      if (!res.ok) throw await failure(res);
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

/** `?a=1&b=x` from the defined entries. */
export function query(params: Record<string, string | number | boolean | null | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}
