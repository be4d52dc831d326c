/** Fetches a release asset (a CRD bundle) by URL. */
export interface BundleFetcher {
  fetchText(url: string, signal?: AbortSignal): Promise<string>;
}

export interface HttpBundleFetcherOptions {
  /** Whole download, redirects included. Default is `60000`. */
  timeoutMs?: number;
  /** Cap of the body, bytes, enforced while streaming. Default is `16777216` (16 MiB). */
  maxBytes?: number;
  /**
   * Hosts a download may be redirected to, besides the host of the URL asked for (the mirror's).
   * Default is `objects.githubusercontent.com` and `release-assets.githubusercontent.com`, where
   * GitHub sends release downloads.
   */
  redirectHosts?: string[];
}

/** Most redirects followed. */
const MAX_REDIRECTS = 5;

/**
 * HTTP(S) GET of a bundle: redirects followed one by one, only to the first URL's host or one of
 * `redirectHosts` (GitHub answers release downloads with a 302 to its CDN); the body read with
 * a cap while streaming, so a huge or endless body costs at most `maxBytes`.
 */
export class HttpBundleFetcher implements BundleFetcher {
  private readonly timeoutMs: number;
  private readonly maxBytes: number;
  private readonly redirectHosts: Set<string>;

  constructor(o: HttpBundleFetcherOptions = {}) {
    this.timeoutMs = o.timeoutMs ?? 60_000;
    this.maxBytes = o.maxBytes ?? 16 * 1024 * 1024;
    this.redirectHosts = new Set((o.redirectHosts ?? ['objects.githubusercontent.com', 'release-assets.githubusercontent.com']).map((h) => h.toLowerCase()));
  }

  async fetchText(url: string, signal?: AbortSignal): Promise<string> {
    const timeout = AbortSignal.timeout(this.timeoutMs);
    const s = signal ? AbortSignal.any([signal, timeout]) : timeout;
    const first = new URL(url);
    let current = first;
    for (let hop = 0; ; hop++) {
      const res = await fetch(current, { redirect: 'manual', signal: s });
      if (res.status >= 300 && res.status < 400 && res.headers.get('location')) {
        await res.body?.cancel();
        if (hop >= MAX_REDIRECTS) throw new Error(`GET ${url}: more than ${MAX_REDIRECTS} redirects`);
        const next = new URL(res.headers.get('location')!, current);
        if (next.protocol !== 'https:' && next.protocol !== 'http:') throw new Error(`GET ${url}: redirected to a ${next.protocol} URL`);
        if (first.protocol === 'https:' && next.protocol !== 'https:') throw new Error(`GET ${url}: redirected from https to ${next.protocol}`);
        if (next.host.toLowerCase() !== first.host.toLowerCase() && !this.redirectHosts.has(next.hostname.toLowerCase())) {
          throw new Error(`GET ${url}: redirected to ${next.host}, which is neither the mirror's host nor one of IRONLENS_CRD_BUNDLE_REDIRECT_HOSTS`);
        }
        current = next;
        continue;
      }
      if (!res.ok) {
        await res.body?.cancel();
        throw new Error(`GET ${url}: HTTP ${res.status}`);
      }
      const declared = Number(res.headers.get('content-length'));
      if (Number.isFinite(declared) && declared > this.maxBytes) {
        await res.body?.cancel();
        throw new Error(`GET ${url}: larger than ${this.maxBytes} bytes`);
      }
      const chunks: Uint8Array[] = [];
      let total = 0;
      if (res.body) {
        const reader = res.body.getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          total += value.byteLength;
          if (total > this.maxBytes) {
            await reader.cancel();
            throw new Error(`GET ${url}: larger than ${this.maxBytes} bytes`);
          }
          chunks.push(value);
        }
      }
      return Buffer.concat(chunks).toString('utf8');
    }
  }
}
