/** Keys whose values never enter the operations log or a log line. */
const SECRET_KEY = /token|secret|password|passwd|private[_-]?key|kubeconfig|authorization|credential/i;

/** A deep copy of `value` with every secret-looking key replaced by "[redacted]". */
export function redact<T>(value: T): T {
  if (Array.isArray(value)) return value.map((v) => redact(v)) as T;
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      out[k] = SECRET_KEY.test(k) ? (v == null || v === '' ? v : '[redacted]') : redact(v);
    }
    return out as T;
  }
  return value;
}
