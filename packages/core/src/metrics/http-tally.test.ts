import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { HttpTally } from './http-tally';

const BOUNDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const NAMES = {
  requests: { name: 'ironlens_http_requests_total', help: 'HTTP requests answered.' },
  duration: { name: 'ironlens_http_request_duration_seconds', help: 'Time to answer an HTTP request.' },
};

/** prom-client's own counter and histogram, fed the same requests: the reference the scrape must match. */
function reference() {
  const registry = new Registry();
  const labelNames = ['listener', 'method', 'route', 'status'];
  const counter = new Counter({ ...NAMES.requests, labelNames, registers: [registry] });
  const histogram = new Histogram({ ...NAMES.duration, labelNames, buckets: BOUNDS, registers: [registry] });
  return {
    registry,
    record(listener: string, method: string, route: string, status: number, seconds: number) {
      const labels = { listener, method, route, status: String(status) };
      counter.inc(labels);
      histogram.observe(labels, seconds);
    },
  };
}

describe('HttpTally', () => {
  it("scrapes as prom-client's counter and histogram do for the same requests: names, labels, buckets, sums", async () => {
    const ref = reference();
    const registry = new Registry();
    const tally = new HttpTally(BOUNDS);
    tally.register(registry, NAMES);
    const requests: Array<[string, string, string, number, number]> = [
      ['boot', 'GET', '/boot-vars', 200, 0.0003],
      ['boot', 'GET', '/boot-vars', 200, 0.0005], // on a bound: counted in that bucket
      ['boot', 'GET', '/boot-vars', 200, 0.002],
      ['boot', 'GET', 'unmatched', 404, 0.00001],
      ['console', 'POST', '/devices/:mac/bind', 500, 0.7],
      ['console', 'GET', '/boot-vars', 200, 42], // past the last bound: +Inf only
    ];
    for (const r of requests) {
      ref.record(...r);
      tally.record(...r);
    }
    const text = await registry.metrics();
    expect(text).toBe(await ref.registry.metrics());
    expect(text).toContain('ironlens_http_requests_total{listener="boot",method="GET",route="/boot-vars",status="200"} 3');
    expect(text).toContain('ironlens_http_request_duration_seconds_bucket{le="0.0005",listener="boot",method="GET",route="/boot-vars",status="200"} 2');
    registry.resetMetrics();
    ref.registry.resetMetrics();
    expect(await registry.metrics()).toBe(await ref.registry.metrics());
  });
});
