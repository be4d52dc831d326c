/** Fetches a release asset (a CRD bundle) by URL. */
export interface BundleFetcher {
  fetchText(url: string, signal?: AbortSignal): Promise<string>;
}

/**
 * HTTP(S) GET that follows redirects (GitHub answers release downloads with a 302 to another
 * host), with a time limit and a size limit.
 */
export class HttpBundleFetcher implements BundleFetcher {
  constructor(
    private readonly timeoutMs = 60_000,
    private readonly maxBytes = 32 * 1024 * 1024,
  ) {}

  async fetchText(url: string, signal?: AbortSignal): Promise<string> {
    const timeout = AbortSignal.timeout(this.timeoutMs);
    const res = await fetch(url, { redirect: 'follow', signal: signal ? AbortSignal.any([signal, timeout]) : timeout });
    if (!res.ok) throw new Error(`GET ${url}: HTTP ${res.status}`);
    const text = await res.text();
    if (Buffer.byteLength(text) > this.maxBytes) throw new Error(`GET ${url}: larger than ${this.maxBytes} bytes`);
    return text;
  }
}
