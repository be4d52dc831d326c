/** Longest piece of a client's input an error message repeats. Default is 200 characters. */
export const ECHO_MAX = 200;

/**
 * A value from a request, quoted for an error message and cut to `max` characters
 * (`…(+N chars)` says how much was left out): a 10 MB hostname gives a short 400, not a 10 MB one.
 */
export function echo(value: unknown, max = ECHO_MAX): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return clip(text, max);
}

/** `text` cut to `max` characters, with a note of how many were left out. */
export function clip(text: string, max = ECHO_MAX): string {
  return text.length <= max ? text : `${text.slice(0, max)}…(+${text.length - max} chars)`;
}

/**
 * A rendered error body with every string cut to `max` characters: the last guard, at the
 * edge, for a message that quoted a client's input whole.
 */
export function clipStrings<T>(body: T, max = 4 * ECHO_MAX): T {
  if (typeof body === 'string') return clip(body, max) as T;
  if (Array.isArray(body)) return body.map((v) => clipStrings(v, max)) as T;
  if (body && typeof body === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(body)) out[clip(k, max)] = clipStrings(v, max);
    return out as T;
  }
  return body;
}
