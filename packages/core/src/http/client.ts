/**
 * `@ironlens/core/http-client`: what every client of ironlens' APIs shares, the console in the
 * browser (`packages/web/src/shared/http.ts`) and the `ironlens` command (`packages/cli/src/client`):
 * an answer read into JSON, an error answer turned into an {@link ApiError} with its status, its
 * stable code and a message in each API's own error shape, and a query string. Isomorphic on
 * purpose: it imports nothing (the web package must not load server code, and the command's client
 * starts fast), and uses only `fetch`'s `Response`, which browsers and Node have.
 */

/** An answer that is not 2xx, or a request that got no answer (`status` 0). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** The API's stable code when it sends one (`code` in every shape); `auth_required` for a 401 without one; `unreachable` for no answer. */
    readonly code?: string,
  ) {
    super(message);
  }
}

type Fields = Record<string, unknown>;

/**
 * The message of an error body, in each API's own shape: FastAPI's `detail` (a string or
 * `[{loc, msg}]`), seed 004's `{"agent", "error"}`, seed 000's `{code, message}` or a problem
 * document (`title`, `detail`); a refused permission (`permission_denied`, either shape) as who
 * the token is and what it may not do.
 */
export function errorText(body: unknown, status: number): string {
  if (!body || typeof body !== 'object') return typeof body === 'string' && body.trim() ? body.trim().slice(0, 500) : `HTTP ${status}`;
  const b = body as Fields;
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

/** The stable code of an error body (`code`, in every API's shape); a 401 without one is `auth_required`. */
export function errorCode(body: unknown, status: number): string | undefined {
  const code = body && typeof body === 'object' ? (body as Fields).code : undefined;
  if (typeof code === 'string') return code;
  return status === 401 ? 'auth_required' : undefined;
}

/** A body as JSON when it is JSON, else its text; `null` when empty. */
export function parseBody(text: string): unknown {
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The answer's body, parsed ({@link parseBody}); an {@link ApiError} when its status is not 2xx. */
export async function readAnswer(res: Response): Promise<unknown> {
  const body = parseBody(await res.text().catch(() => ''));
  if (!res.ok) throw new ApiError(res.status, errorText(body, res.status), errorCode(body, res.status));
  return body;
}

/** The {@link ApiError} of a request that got no answer: `prefix`, then why (Node's fetch puts it in `cause`). */
export function unreachable(prefix: string, err: unknown): ApiError {
  const e = err as Error & { cause?: { message?: string } };
  const why = e?.cause ? String(e.cause.message ?? e.cause) : String(e?.message ?? err);
  return new ApiError(0, `${prefix}: ${why}`, 'unreachable');
}

/** `?a=1&b=x` from the defined, non-empty entries; `''` when there are none. */
export function query(params: Record<string, string | number | boolean | null | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}
