/** Generic shapes of secrets in tool output: `password: x`, `token=x`, kubeconfig key data, bearer tokens, URL credentials. */
const GENERIC: Array<[RegExp, string]> = [
  [/((?:password|passwd|passphrase|token|secret|client-key-data|client-certificate-data|private[_-]?key)["']?\s*[:=]\s*["']?)[^\s"',}]+/gi, '$1[redacted]'],
  [/(Bearer\s+)[A-Za-z0-9._~+/=-]+/g, '$1[redacted]'],
  [/(\b[a-z][a-z0-9+.-]*:\/\/)[^\s/@:]+:[^\s/@]+@/gi, '$1[redacted]@'],
  [/-----BEGIN [A-Z ]*PRIVATE KEY-----.*/g, '[redacted private key]'],
];

/** Python's `urllib.parse.quote(s, safe="")`: everything but letters, digits and `_.-~` percent-encoded. */
function pyQuote(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

const hex = (c: string, width: number) => c.charCodeAt(0).toString(16).padStart(width, '0');

/** Python's `repr()` of a string, without its quotes: `\\`, the quote it chose, and what is not printable escaped. */
function pyRepr(s: string, quote: "'" | '"'): string {
  return s.replace(/[\\'"\p{Cc}\u00a0\u2028\u2029]/gu, (c) => {
    if (c === '\\') return '\\\\';
    if (c === "'" || c === '"') return c === quote ? `\\${c}` : c;
    if (c === '\n') return '\\n';
    if (c === '\r') return '\\r';
    if (c === '\t') return '\\t';
    return c.charCodeAt(0) <= 0xff ? `\\x${hex(c, 2)}` : `\\u${hex(c, 4)}`;
  });
}

/**
 * The escapings a tool on the bootstrap's path applies to a value it prints, each giving the
 * value's inner text (the quotes around it, where a tool adds some, are not part of it: a form
 * inside the quoted one is replaced there too):
 * - JSON (Ansible prints results and variables as JSON; Python's `ensure_ascii` as well);
 * - the shell: `shlex.quote` (`'"'"'` for a quote), the `'\''` spelling, double quotes (`\"`,
 *   `\$`, `` \` ``, `\\`), and backslashes before every special character (`printf %q`);
 * - Python's `repr()` (either quote);
 * - URL encoding: JavaScript's and Python's, upper- and lower-case hex, form encoding's `+`.
 */
const ESCAPINGS: Array<(s: string) => string> = [
  (s) => JSON.stringify(s).slice(1, -1),
  (s) => JSON.stringify(s).slice(1, -1).replace(/[\u007f-\uffff]/g, (c) => `\\u${hex(c, 4)}`),
  (s) => s.replace(/'/g, `'"'"'`),
  (s) => s.replace(/'/g, `'\\''`),
  (s) => s.replace(/[\\"$`]/g, '\\$&'),
  (s) => s.replace(/[^A-Za-z0-9_\-.,:/@%+=]/g, '\\$&'),
  (s) => pyRepr(s, "'"),
  (s) => pyRepr(s, '"'),
  (s) => encodeURIComponent(s),
  (s) => pyQuote(s),
  (s) => pyQuote(s).replace(/%[0-9A-F]{2}/g, (h) => h.toLowerCase()),
  (s) => encodeURIComponent(s).replace(/%20/g, '+'),
];

/** A short secret (under 4 characters) is replaced only where it is not part of a longer word. */
const SHORT = 4;

/** How many escapings in a row are followed: a shell-quoted value in JSON in JSON is three. */
const DEPTH = 3;

/**
 * The forms one secret takes in a tool's output: as is, and every composition of up to three of
 * the {@link ESCAPINGS} (issue 29, finding 14: a password shell-quoted, then JSON-escaped by
 * Ansible, `'pa\"ss\\wo'\\''rd$x'`, was left whole while each single escaping was redacted).
 * A form that holds a shorter form of the same secret (of 4 characters or more) is left out:
 * replacing the shorter one already removes every character of the secret from it. (A form under
 * 4 characters is only replaced as a word of its own, so it stands in for no longer one.)
 */
export function secretForms(secret: string): string[] {
  const all = new Set<string>([secret]);
  let level = [secret];
  for (let d = 0; d < DEPTH; d++) {
    const next: string[] = [];
    for (const f of level) {
      for (const apply of ESCAPINGS) {
        const g = apply(f);
        if (!all.has(g)) {
          all.add(g);
          next.push(g);
        }
      }
    }
    level = next;
  }
  const sorted = [...all].filter(Boolean).sort((a, b) => a.length - b.length);
  const kept: string[] = [];
  for (const f of sorted) if (!kept.some((k) => k.length >= SHORT && f.includes(k))) kept.push(f);
  return kept;
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The longest run of letters and digits in `s`: every escaping above leaves it as is, so a line without it holds no form of `s`. */
function anchorOf(s: string): string {
  return (s.match(/[A-Za-z0-9]+/g) ?? []).reduce((a, b) => (b.length > a.length ? b : a), '');
}

/**
 * Redacts one job's log lines: every password, private key (line by line) and proxy credential
 * the request carried, in each of its {@link secretForms}, at every length (a 1–2 character
 * password too, where it stands as a word of its own), plus the generic shapes above. All the
 * forms of all the secrets are replaced longest first, so a secret that contains another (or a
 * form of another) is replaced whole, never leaving its tail. A secret's forms are only looked
 * for in a line that holds its longest run of letters and digits. Applied before a line reaches
 * the store.
 */
export class Redactor {
  private readonly groups: Array<{ anchor: string; forms: string[] }> = [];
  private readonly long: string[];
  private readonly short: RegExp | undefined;

  constructor(secrets: ReadonlyArray<string | undefined>) {
    const values = new Set<string>();
    for (const s of secrets) {
      if (!s) continue;
      values.add(s);
      // A private key shows up line by line, if at all.
      for (const line of s.split(/\r?\n/)) {
        const t = line.trim();
        if (t.length >= 16 && !t.startsWith('-----')) values.add(t);
      }
    }
    const all = new Set<string>();
    for (const v of values) {
      const forms = secretForms(v);
      for (const f of forms) all.add(f);
      this.groups.push({ anchor: anchorOf(v), forms });
    }
    // Longest first, so a secret that contains another is replaced whole.
    const sorted = [...all].sort((a, b) => b.length - a.length);
    this.long = sorted.filter((s) => s.length >= SHORT);
    const short = sorted.filter((s) => s.length < SHORT);
    this.short = short.length ? new RegExp(`(?<![A-Za-z0-9])(?:${short.map(escapeRe).join('|')})(?![A-Za-z0-9])`, 'g') : undefined;
  }

  line(text: string): string {
    let out = text;
    // Only the forms of secrets whose anchor the line holds (or that have none) can be in it.
    const candidates = this.groups.some((g) => g.anchor === '' || text.includes(g.anchor));
    if (candidates) {
      for (const s of this.long) if (out.includes(s)) out = out.split(s).join('[redacted]');
      if (this.short) out = out.replace(this.short, '[redacted]');
    }
    for (const [re, rep] of GENERIC) out = out.replace(re, rep);
    return out;
  }
}

/** At most `size` holders at once; waiting is abortable. */
export class Slots {
  private used = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly size: number) {}

  async acquire(signal: AbortSignal): Promise<() => void> {
    if (signal.aborted) throw signal.reason;
    if (this.used < this.size) {
      this.used++;
      return this.releaser();
    }
    await new Promise<void>((resolve, reject) => {
      const wake = () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        const i = this.waiting.indexOf(wake);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(signal.reason);
      };
      this.waiting.push(wake);
      signal.addEventListener('abort', onAbort, { once: true });
    });
    // The releaser handed its slot over: `used` did not change.
    return this.releaser();
  }

  private releaser(): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.used--;
    };
  }
}
