/**
 * FakePrometheus: a STAND-IN for a Prometheus server's instant-query endpoint,
 * `GET|POST /api/v1/query` (HTTP API v1), holding GPU series the way the NVIDIA
 * DCGM exporter and Intel XPU manager export them. Nothing in the harness runs a
 * Prometheus, and the cluster manager only needs instant queries.
 *
 * Supported PromQL subset (anything else answers `bad_data`, as Prometheus does
 * for a query it cannot parse):
 *   metric
 *   metric{label="v", label!="v", label=~"re", label!~"re"}
 *   sum|avg|min|max|count [by|without (l1, l2)] (selector)
 *   sum|avg|min|max|count (selector) [by|without (l1, l2)]
 * Response: {"status":"success","data":{"resultType":"vector","result":[{"metric":{...},"value":[<unix s>,"<value>"]}]}}
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

export interface Sample {
  metric: Record<string, string>; // includes __name__
  value: number;
}

type Matcher = { label: string; op: '=' | '!=' | '=~' | '!~'; value: string };

export class PromQlError extends Error {}

export class FakePrometheus {
  private series: Sample[] = [];
  private server?: Server;
  url = '';
  readonly queries: string[] = [];

  /** Replaces all series with the same name+labels, adds new ones. */
  set(samples: Sample[]): void {
    const key = (s: Sample) => JSON.stringify(Object.entries(s.metric).sort());
    const incoming = new Map(samples.map((s) => [key(s), s]));
    this.series = this.series.filter((s) => !incoming.has(key(s))).concat([...incoming.values()]);
  }

  clear(): void {
    this.series = [];
  }

  all(): readonly Sample[] {
    return this.series;
  }

  async listen(ip = '127.0.0.1'): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    const port = await new Promise<number>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(0, ip, () => {
        const a = this.server!.address();
        resolve(typeof a === 'object' && a ? a.port : 0);
      });
    });
    this.url = `http://${ip}:${port}`;
    return this.url;
  }

  async close(): Promise<void> {
    const s = this.server;
    if (!s) return;
    this.server = undefined;
    s.closeAllConnections?.();
    await new Promise<void>((r) => s.close(() => r()));
  }

  /** Evaluates an instant query now. */
  query(q: string): Sample[] {
    return evaluate(q, this.series);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://prometheus');
    const send = (code: number, body: unknown) =>
      res.writeHead(code, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (url.pathname === '/-/ready' || url.pathname === '/-/healthy') {
      res.writeHead(200).end('Prometheus Server is Ready.\n');
      return;
    }
    if (url.pathname !== '/api/v1/query') {
      send(404, { status: 'error', errorType: 'not_found', error: `no stand-in route ${url.pathname}` });
      return;
    }
    const params = new URLSearchParams(url.search);
    if (req.method === 'POST') {
      let body = '';
      for await (const c of req) body += c;
      for (const [k, v] of new URLSearchParams(body)) params.set(k, v);
    } else if (req.method !== 'GET') {
      send(405, { status: 'error', errorType: 'bad_data', error: 'method not allowed' });
      return;
    }
    const q = params.get('query');
    if (!q) {
      send(400, { status: 'error', errorType: 'bad_data', error: 'invalid parameter "query": no query' });
      return;
    }
    this.queries.push(q);
    const t = params.get('time') ? Number(params.get('time')) : Date.now() / 1000;
    try {
      const result = this.query(q).map((s) => ({ metric: s.metric, value: [t, formatValue(s.value)] }));
      send(200, { status: 'success', data: { resultType: 'vector', result } });
    } catch (e) {
      send(400, { status: 'error', errorType: 'bad_data', error: (e as Error).message });
    }
  }
}

function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

const AGG = /^(sum|avg|min|max|count)\s*(?:(by|without)\s*\(([^)]*)\)\s*)?\(((?:[^(){}]|\{[^}]*\})*)\)\s*(?:(by|without)\s*\(([^)]*)\))?$/s;

export function evaluate(query: string, series: readonly Sample[]): Sample[] {
  const q = query.trim();
  const agg = AGG.exec(q);
  if (agg) {
    const [, op, mode1, labels1, inner, mode2, labels2] = agg;
    if (mode1 && mode2) throw new PromQlError('parse error: duplicate grouping clause');
    const mode = (mode1 ?? mode2) as 'by' | 'without' | undefined;
    const labels = (labels1 ?? labels2 ?? '').split(',').map((s) => s.trim()).filter(Boolean);
    return aggregate(op as 'sum', mode, labels, select(inner, series));
  }
  return select(q, series);
}

function select(expr: string, series: readonly Sample[]): Sample[] {
  const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)?\s*(?:\{(.*)\})?$/s.exec(expr.trim());
  if (!m || (!m[1] && m[2] === undefined)) {
    throw new PromQlError(`parse error: the query stand-in supports selectors and simple aggregations only: ${expr}`);
  }
  const matchers = parseMatchers(m[2] ?? '');
  if (m[1]) matchers.unshift({ label: '__name__', op: '=', value: m[1] });
  if (!matchers.some((x) => (x.op === '=' || x.op === '=~') && x.value !== '' && !new RegExp(`^(?:${x.value})$`).test(''))) {
    throw new PromQlError('vector selector must contain at least one non-empty matcher');
  }
  return series.filter((s) =>
    matchers.every((mt) => {
      const v = s.metric[mt.label] ?? '';
      switch (mt.op) {
        case '=':
          return v === mt.value;
        case '!=':
          return v !== mt.value;
        case '=~':
          return new RegExp(`^(?:${mt.value})$`).test(v);
        default:
          return !new RegExp(`^(?:${mt.value})$`).test(v);
      }
    }),
  );
}

function parseMatchers(body: string): Matcher[] {
  const out: Matcher[] = [];
  const re = /\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*(,|$)/gy;
  let pos = 0;
  while (pos < body.length) {
    re.lastIndex = pos;
    const m = re.exec(body);
    if (!m) {
      if (body.slice(pos).trim() === '') break;
      throw new PromQlError(`parse error: unexpected label matcher syntax near "${body.slice(pos)}"`);
    }
    out.push({ label: m[1], op: m[2] as Matcher['op'], value: JSON.parse(`"${m[3]}"`) as string });
    pos = re.lastIndex;
  }
  return out;
}

function aggregate(op: 'sum' | 'avg' | 'min' | 'max' | 'count', mode: 'by' | 'without' | undefined, labels: string[], input: Sample[]): Sample[] {
  const groups = new Map<string, { metric: Record<string, string>; values: number[] }>();
  for (const s of input) {
    let metric: Record<string, string>;
    if (mode === 'by') metric = Object.fromEntries(labels.filter((l) => l in s.metric).map((l) => [l, s.metric[l]]));
    else if (mode === 'without') {
      metric = Object.fromEntries(Object.entries(s.metric).filter(([k]) => k !== '__name__' && !labels.includes(k)));
    } else metric = {};
    const key = JSON.stringify(Object.entries(metric).sort());
    const g = groups.get(key) ?? { metric, values: [] };
    g.values.push(s.value);
    groups.set(key, g);
  }
  return [...groups.values()].map(({ metric, values }) => {
    let value: number;
    switch (op) {
      case 'sum':
        value = values.reduce((a, b) => a + b, 0);
        break;
      case 'avg':
        value = values.reduce((a, b) => a + b, 0) / values.length;
        break;
      case 'min':
        value = Math.min(...values);
        break;
      case 'max':
        value = Math.max(...values);
        break;
      case 'count':
        value = values.length;
        break;
    }
    return { metric, value };
  });
}
