/**
 * Words that make a key name a secret when the key ends with them: `token`, `agent_token`,
 * `consoleToken`, `client_secret`, `password`, `kubeconfig`, `authorization`. A key that
 * only starts with such a word names something else (`token_rotated` is a boolean, a
 * `kubeconfig_path` a path) and is kept.
 */
const SECRET_WORDS = new Set(['token', 'tokens', 'secret', 'secrets', 'password', 'passwords', 'passwd', 'passphrase', 'credential', 'credentials', 'authorization', 'kubeconfig', 'cookie']);
/** `<word>_key` is a secret for these words (`private_key`, `api_key`); a bare `key` is not. */
const SECRET_KEY_QUALIFIERS = new Set(['private', 'api', 'secret', 'access']);
/** The same names written as one word. */
const SECRET_COMPOUNDS = new Set(['privatekey', 'apikey', 'accesskey', 'secretkey']);

/** The words of a key: `agentToken`, `agent_token`, `agent-token` all give `agent`, `token`. */
function wordsOf(key: string): string[] {
  return key
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
}

/** True when a field of this name holds a secret (see {@link SECRET_WORDS}). */
export function isSecretKey(key: string): boolean {
  const words = wordsOf(key);
  const last = words.at(-1);
  if (last === undefined) return false;
  if (SECRET_WORDS.has(last) || SECRET_COMPOUNDS.has(last)) return true;
  return last === 'key' && words.length > 1 && SECRET_KEY_QUALIFIERS.has(words[words.length - 2]);
}

/** Words that make a query parameter's name a secret's wherever they stand in it (`key` too: `?key=`, `api_key`). */
const SECRET_PARAM_WORDS = new Set([...SECRET_WORDS, ...SECRET_COMPOUNDS, 'key', 'keys', 'pass', 'pwd', 'sig', 'signature', 'auth', 'session', 'jwt']);

/** True when a query parameter of this name carries a secret (`token`, `access_token`, `password`, `key`, `X-Amz-Signature`, …). */
export function isSecretParam(name: string): boolean {
  let decoded = name;
  try {
    decoded = decodeURIComponent(name.replace(/\+/g, ' '));
  } catch {
    // a malformed escape: classified as written
  }
  return isSecretKey(decoded) || wordsOf(decoded).some((w) => SECRET_PARAM_WORDS.has(w));
}

/**
 * A request URL as a log may show it (issue 29, finding 11): the path as is, and the value of
 * every query parameter named like a secret ({@link isSecretParam}) replaced by `[redacted]`.
 */
export function redactQuery(url: string): string {
  const q = url.indexOf('?');
  if (q === -1) return url;
  const hash = url.indexOf('#', q);
  const query = url.slice(q + 1, hash === -1 ? undefined : hash);
  const parts = query.split('&').map((part) => {
    const eq = part.indexOf('=');
    const name = eq === -1 ? part : part.slice(0, eq);
    return eq !== -1 && isSecretParam(name) ? `${name}=[redacted]` : part;
  });
  return `${url.slice(0, q + 1)}${parts.join('&')}${hash === -1 ? '' : url.slice(hash)}`;
}

/** `scheme://user:password@host/…` with the user info replaced; other text unchanged. */
export function redactUrlCredentials(text: string): string {
  return text.replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@]*@/gi, '$1[redacted]@');
}

/**
 * A deep copy of `value` with every secret-named field replaced by "[redacted]" (empty
 * values kept, so a log still shows that none was given), and credentials in URLs
 * (`http://user:pass@host`) removed from every string.
 */
export function redact<T>(value: T): T {
  if (typeof value === 'string') return redactUrlCredentials(value) as T;
  if (Array.isArray(value)) return value.map((v) => redact(v)) as T;
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      out[k] = isSecretKey(k) ? (v == null || v === '' ? v : '[redacted]') : redact(v);
    }
    return out as T;
  }
  return value;
}
