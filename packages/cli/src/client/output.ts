/**
 * What the client commands print: plain tables, `key  value` details, and the one rule every byte
 * they write passes through ({@link printable}). Data from a server (a device's `uuid`, an error's
 * message, a job's log) may hold terminal controls: an escape sequence that retitles the window or
 * clears the screen, a bidi override that shows a line in another order than it is. The runner
 * (`./index.ts`) writes everything through {@link printable}, so every verb, present or to come,
 * shows such characters as `\uXXXX` escapes; tables escape their cells first, so their columns stay
 * aligned.
 */

/**
 * The characters shown escaped: C0 controls but the line feed, DEL, C1 controls, the bidi
 * controls (U+061C, U+200E/U+200F, U+202A–U+202E, U+2066–U+2069) and the line and paragraph
 * separators U+2028/U+2029.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is this expression's purpose
const UNPRINTABLE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/g;

/**
 * `text` with each unprintable character as a `\uXXXX` escape (the JSON escape of the same
 * character, so `-o json` output stays valid JSON and decodes to exactly what the server sent).
 */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** One table cell or detail value: `-` for nothing, lists joined by commas, objects as JSON, on one line. */
export function cell(v: unknown): string {
  if (v === null || v === undefined || v === '') return '-';
  if (Array.isArray(v)) return v.length ? v.map(cell).join(',') : '-';
  if (typeof v === 'object') return printable(JSON.stringify(v));
  return printable(String(v).replace(/[\r\n\t]/g, ' '));
}

/** A column: its header and the value of a row. */
export type Column<R> = readonly [string, (r: R) => unknown];

/** A plain table: a header row and left-aligned columns (no colour: scripts read it too). */
export function table<R>(rows: readonly R[], columns: ReadonlyArray<Column<R>>): string {
  const cells = rows.map((r) => columns.map(([, f]) => cell(f(r))));
  const head = columns.map(([h]) => h.toUpperCase());
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c: string[]) => c.map((v, i) => (i === c.length - 1 ? v : v.padEnd(widths[i]))).join('  ').trimEnd();
  return `${[line(head), ...cells.map(line)].join('\n')}\n`;
}

/** `key  value` lines of one object (nested values as JSON). */
export function details(o: object): string {
  const entries = Object.entries(o).map(([k, v]) => [printable(k), cell(v)] as const);
  const w = Math.max(0, ...entries.map(([k]) => k.length));
  return `${entries.map(([k, v]) => `${k.padEnd(w)}  ${v}`).join('\n')}\n`;
}
