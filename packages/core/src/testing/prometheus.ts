/** One sample of a Prometheus text exposition: `name{labels} value`. */
export interface PromSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/gy;

/**
 * Parses the text exposition format (0.0.4) as a scraper reads it; throws on a line that is
 * neither a comment nor a sample, so a malformed exposition fails the test that reads it.
 */
export function parsePrometheusText(text: string): PromSample[] {
  const out: PromSample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`not a Prometheus sample line: ${JSON.stringify(line)}`);
    const labels: Record<string, string> = {};
    const body = m[2] ?? '';
    LABEL.lastIndex = 0;
    let consumed = 0;
    for (let l = LABEL.exec(body); l; l = LABEL.exec(body)) {
      labels[l[1]] = l[2].replace(/\\(.)/g, (_s, c: string) => (c === 'n' ? '\n' : c));
      consumed = LABEL.lastIndex;
    }
    if (consumed !== body.length) throw new Error(`malformed labels in ${JSON.stringify(line)}`);
    // Go's ParseFloat, which Prometheus uses, takes NaN and Inf in any case (prom-client writes `Nan`).
    const raw = m[3].toLowerCase();
    const value = raw === '+inf' || raw === 'inf' ? Number.POSITIVE_INFINITY : raw === '-inf' ? Number.NEGATIVE_INFINITY : raw === 'nan' ? Number.NaN : Number(raw);
    if (Number.isNaN(value) && raw !== 'nan') throw new Error(`not a sample value in ${JSON.stringify(line)}`);
    out.push({ name: m[1], labels, value });
  }
  return out;
}

/**
 * The value of the one sample named `name` whose labels include `labels`; `0` when there is
 * none (a counter never incremented has no sample). Throws when several match.
 */
export function sampleValue(samples: PromSample[], name: string, labels: Record<string, string> = {}): number {
  const hits = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (hits.length > 1) throw new Error(`${hits.length} samples of ${name} match ${JSON.stringify(labels)}: give more labels`);
  return hits[0]?.value ?? 0;
}
