import type { Metric, Registry } from 'prom-client';

/** One sample as prom-client's registry formats it: `metricName{labels,sharedLabels} value`. */
interface Sample {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
  sharedLabels?: Record<string, string>;
}

/** One label set's figures: requests, seconds in all, and the requests per bucket (not cumulative). */
interface Row {
  readonly labels: { listener: string; method: string; route: string; status: string };
  count: number;
  sum: number;
  readonly perBucket: number[];
}

/** The map under `key` in `m`, made empty at its first use. */
function child<K, V extends Map<unknown, unknown>>(m: Map<K, V>, key: K): V {
  let v = m.get(key);
  if (!v) {
    v = new Map() as V;
    m.set(key, v);
  }
  return v;
}

/**
 * `ironlens_http_requests_total` and `ironlens_http_request_duration_seconds`, tallied by this
 * process itself (issue 32, item 9). prom-client hashes and checks a label object at every
 * `inc` and `observe`: two of each per request, on every listener, the boot path included. Here
 * one request walks four small maps whose keys are strings the router and the parser reuse
 * (listener, method, route pattern) and the status code, then adds to its row. Scrapes read the
 * rows in the text format prom-client writes for its own counter and histogram (the same names,
 * labels and `le` buckets).
 */
export class HttpTally {
  private readonly tree = new Map<string, Map<string, Map<string, Map<number, Row>>>>();
  private rows: Row[] = [];

  constructor(private readonly bounds: readonly number[]) {}

  record(listener: string, method: string, route: string, status: number, seconds: number): void {
    const byStatus = child(child(child(this.tree, listener), method), route);
    let row = byStatus.get(status);
    if (!row) {
      row = { labels: { listener, method, route, status: String(status) }, count: 0, sum: 0, perBucket: this.bounds.map(() => 0) };
      byStatus.set(status, row);
      this.rows.push(row);
    }
    row.count += 1;
    row.sum += seconds;
    const bounds = this.bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (seconds <= bounds[i]) {
        row.perBucket[i] += 1;
        break;
      }
    }
  }

  reset(): void {
    this.tree.clear();
    this.rows = [];
  }

  /** Registers both metrics in `registry`, under the names and help texts given. */
  register(registry: Registry, names: { requests: { name: string; help: string }; duration: { name: string; help: string } }): void {
    const requests = { ...names.requests, type: 'counter', aggregator: 'sum' } as const;
    const duration = { ...names.duration, type: 'histogram', aggregator: 'sum' } as const;
    const counter = {
      ...requests,
      get: async () => ({ ...requests, values: this.rows.map((r): Sample => ({ labels: { ...r.labels }, value: r.count })) }),
      reset: () => this.reset(),
    };
    const histogram = {
      ...duration,
      // As prom-client's histogram hands them to the registry: `le` as the value's label, the row's as shared.
      getForPromString: async () => ({ ...duration, values: this.histogramValues(duration.name, true) }),
      get: async () => ({ ...duration, values: this.histogramValues(duration.name, false) }),
      reset: () => this.reset(),
    };
    // The registry takes any object with these members; its type names prom-client's own classes only.
    registry.registerMetric(counter as unknown as Metric);
    registry.registerMetric(histogram as unknown as Metric);
  }

  private histogramValues(name: string, shared: boolean): Sample[] {
    const out: Sample[] = [];
    const value = (labels: Record<string, string | number>, v: number, metricName: string, row: Row): Sample =>
      shared ? { labels, value: v, metricName, sharedLabels: row.labels } : { labels: { ...row.labels, ...labels }, value: v, metricName };
    for (const row of this.rows) {
      let acc = 0;
      this.bounds.forEach((le, i) => {
        acc += row.perBucket[i];
        out.push(value({ le }, acc, `${name}_bucket`, row));
      });
      out.push(value({ le: '+Inf' }, row.count, `${name}_bucket`, row), value({}, row.sum, `${name}_sum`, row), value({}, row.count, `${name}_count`, row));
    }
    return out;
  }
}
