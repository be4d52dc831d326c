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

/**
 * The forms one secret takes in a tool's output: as is; JSON-escaped (Ansible prints results and
 * variables as JSON: `pa\"ss\\wo'rd`), and JSON-escaped twice (a JSON string inside JSON);
 * shell-quoted (Python's `shlex.quote`: `'pa"ss'"'"'rd'`, and the `'\''` spelling); URL-encoded
 * (JavaScript's and Python's, in upper and lower case hex, and form encoding's `+`).
 */
export function secretForms(secret: string): string[] {
  const json = JSON.stringify(secret).slice(1, -1);
  const forms = new Set<string>([
    secret,
    json,
    JSON.stringify(json).slice(1, -1),
    `'${secret.replace(/'/g, `'"'"'`)}'`,
    `'${secret.replace(/'/g, `'\\''`)}'`,
    secret.replace(/'/g, `'"'"'`),
    secret.replace(/'/g, `'\\''`),
  ]);
  for (const enc of [encodeURIComponent(secret), pyQuote(secret)]) {
    forms.add(enc);
    forms.add(enc.replace(/%[0-9A-F]{2}/g, (h) => h.toLowerCase()));
    forms.add(enc.replace(/%20/g, '+'));
  }
  return [...forms].filter(Boolean);
}

/** A short secret (under 4 characters) is replaced only where it is not part of a longer word. */
const SHORT = 4;
const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Redacts one job's log lines: every password, private key (line by line) and proxy credential
 * the request carried, in each of its {@link secretForms}, at every length (a 1–2 character
 * password too, where it stands as a word of its own), plus the generic shapes above. All the
 * forms of all the secrets are replaced longest first, so a secret that contains another (or a
 * form of another) is replaced whole, never leaving its tail. Applied before a line reaches the store.
 */
export class Redactor {
  private readonly long: string[];
  private readonly short: RegExp | undefined;

  constructor(secrets: ReadonlyArray<string | undefined>) {
    const all = new Set<string>();
    for (const s of secrets) {
      if (!s) continue;
      for (const f of secretForms(s)) all.add(f);
      // A private key shows up line by line, if at all.
      for (const line of s.split(/\r?\n/)) {
        const t = line.trim();
        if (t.length >= 16 && !t.startsWith('-----')) all.add(t);
      }
    }
    // Longest first, so a secret that contains another is replaced whole.
    const sorted = [...all].sort((a, b) => b.length - a.length);
    this.long = sorted.filter((s) => s.length >= SHORT);
    const short = sorted.filter((s) => s.length < SHORT);
    this.short = short.length ? new RegExp(`(?<![A-Za-z0-9])(?:${short.map(escapeRe).join('|')})(?![A-Za-z0-9])`, 'g') : undefined;
  }

  line(text: string): string {
    let out = text;
    for (const s of this.long) if (out.includes(s)) out = out.split(s).join('[redacted]');
    if (this.short) out = out.replace(this.short, '[redacted]');
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
