/** Where `kindest/node` tags come from. */
export interface NodeImageTags {
  /** Every tag name the registry lists (all pages). Rejects when the registry cannot be read. */
  list(): Promise<string[]>;
}

/**
 * Reads Docker Hub's tags API (`{"next": url|null, "results": [{"name": "v1.31.0"}, …]}`),
 * following `next` up to `maxPages` pages.
 */
export class RegistryNodeTags implements NodeImageTags {
  constructor(
    private readonly url: string,
    private readonly opts: { maxPages?: number; timeoutMs?: number; fetch?: typeof fetch } = {},
  ) {}

  async list(): Promise<string[]> {
    const doFetch = this.opts.fetch ?? fetch;
    const names: string[] = [];
    let next: string | null = this.url;
    for (let page = 0; next && page < (this.opts.maxPages ?? 10); page++) {
      const res: Response = await doFetch(next, { signal: AbortSignal.timeout(this.opts.timeoutMs ?? 10_000), headers: { accept: 'application/json' } });
      if (!res.ok) throw new Error(`registry answered ${res.status} for ${next}`);
      const body = (await res.json()) as { next?: unknown; results?: Array<{ name?: unknown }> };
      for (const r of body.results ?? []) if (typeof r?.name === 'string') names.push(r.name);
      next = typeof body.next === 'string' && body.next ? new URL(body.next, next).toString() : null;
    }
    return names;
  }
}

const STABLE = /^v(\d+)\.(\d+)\.(\d+)$/;

/** Keeps stable `vX.Y.Z` tags only, without duplicates, newest version first. */
export function stableTags(names: string[]): string[] {
  const parsed = [...new Set(names)]
    .map((n) => ({ n, m: STABLE.exec(n) }))
    .filter((x): x is { n: string; m: RegExpExecArray } => x.m !== null)
    .map(({ n, m }) => ({ n, v: [Number(m[1]), Number(m[2]), Number(m[3])] }));
  parsed.sort((a, b) => b.v[0] - a.v[0] || b.v[1] - a.v[1] || b.v[2] - a.v[2]);
  return parsed.map((p) => p.n);
}
