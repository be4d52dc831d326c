/**
 * Characters that change how a terminal, a log line or a page shows text, rather than being
 * text (issue 29, finding 8): C0 controls (U+0000–U+001F: ESC starts a terminal escape, CR and LF
 * start lines), DEL and the C1 controls (U+007F–U+009F: U+009B is a one-character CSI, U+0085 a
 * line break), the line and paragraph separators (U+2028, U+2029) and the bidirectional
 * formatting characters (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069: U+202E makes
 * `exe.txt` of `txt.exe`). One definition for every place where data enters: device and host
 * reports, imports, storage agents' answers, BMCs' error texts.
 */
export const UNSAFE_TEXT_CLASS = '\\u0000-\\u001f\\u007f-\\u009f\\u061c\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069';

const UNSAFE = new RegExp(`[${UNSAFE_TEXT_CLASS}]`, 'u');
const UNSAFE_ALL = new RegExp(`[${UNSAFE_TEXT_CLASS}]`, 'gu');

/** A JSON-schema `pattern` for text with none of those characters (TypeBox `Type.String({ pattern })`). */
export const SAFE_TEXT_PATTERN = `^[^${UNSAFE_TEXT_CLASS}]*$`;

/** The first unsafe character of `text` as `U+XXXX`, or null when there is none. */
export function unsafeCharacter(text: string): string | null {
  const m = UNSAFE.exec(text);
  return m ? `U+${(m[0].codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}` : null;
}

/** True when `text` holds none of the unsafe characters. */
export function isSafeText(text: string): boolean {
  return !UNSAFE.test(text);
}

/**
 * Why `value` may not enter as text (`has U+001B, a control or bidirectional formatting
 * character`), or null when it may. Non-strings are not this check's business (null).
 */
export function unsafeTextReason(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const c = unsafeCharacter(value);
  return c ? `has ${c}, a control or bidirectional formatting character` : null;
}

/** `text` with every unsafe character replaced by `with` (text an outside system wrote, kept for a message: a BMC's error). */
export function replaceUnsafeText(text: string, replacement = ' '): string {
  return text.replace(UNSAFE_ALL, replacement);
}
