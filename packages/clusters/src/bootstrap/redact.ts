/** Generic shapes of secrets in tool output: `password: x`, `token=x`, kubeconfig key data, bearer tokens, URL credentials. */
const GENERIC: Array<[RegExp, string]> = [
  [/((?:password|passwd|passphrase|token|secret|client-key-data|client-certificate-data|private[_-]?key)["']?\s*[:=]\s*["']?)[^\s"',}]+/gi, '$1[redacted]'],
  [/(Bearer\s+)[A-Za-z0-9._~+/=-]+/g, '$1[redacted]'],
  [/(\b[a-z][a-z0-9+.-]*:\/\/)[^\s/@:]+:[^\s/@]+@/gi, '$1[redacted]@'],
  [/-----BEGIN [A-Z ]*PRIVATE KEY-----.*/g, '[redacted private key]'],
];

/**
 * Redacts one job's log lines: every password, private key (line by line) and proxy credential
 * the request carried, plus the generic shapes above. Applied before a line reaches the store.
 */
export class Redactor {
  private readonly secrets: string[];

  constructor(secrets: ReadonlyArray<string | undefined>) {
    const all = new Set<string>();
    for (const s of secrets) {
      if (!s) continue;
      all.add(s);
      // A private key shows up line by line, if at all.
      for (const line of s.split(/\r?\n/)) {
        const t = line.trim();
        if (t.length >= 16 && !t.startsWith('-----')) all.add(t);
      }
    }
    // Longest first, so a secret that contains another is replaced whole.
    this.secrets = [...all].filter((s) => s.length >= 3).sort((a, b) => b.length - a.length);
  }

  line(text: string): string {
    let out = text;
    for (const s of this.secrets) if (out.includes(s)) out = out.split(s).join('[redacted]');
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
