import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { FakePrometheus, evaluate, type Sample } from './prometheus.stand-in';

const series: Sample[] = [
  { metric: { __name__: 'DCGM_FI_DEV_GPU_UTIL', Hostname: 'a', gpu: '0' }, value: 10 },
  { metric: { __name__: 'DCGM_FI_DEV_GPU_UTIL', Hostname: 'a', gpu: '1' }, value: 30 },
  { metric: { __name__: 'DCGM_FI_DEV_GPU_UTIL', Hostname: 'b', gpu: '0' }, value: 50 },
  { metric: { __name__: 'DCGM_FI_DEV_FB_USED', Hostname: 'b', gpu: '0' }, value: 1024 },
];

describe('FakePrometheus (stand-in for /api/v1/query)', () => {
  it('evaluates selectors with all four matcher kinds', () => {
    expect(evaluate('DCGM_FI_DEV_GPU_UTIL', series)).toHaveLength(3);
    expect(evaluate('DCGM_FI_DEV_GPU_UTIL{Hostname="a"}', series)).toHaveLength(2);
    expect(evaluate('DCGM_FI_DEV_GPU_UTIL{Hostname!="a"}', series)).toHaveLength(1);
    expect(evaluate('{__name__=~"DCGM_.*", gpu="0"}', series)).toHaveLength(3);
    expect(evaluate('DCGM_FI_DEV_GPU_UTIL{Hostname!~"a|b"}', series)).toHaveLength(0);
  });

  it('aggregates with by/without in both positions', () => {
    const byHost = evaluate('sum by (Hostname) (DCGM_FI_DEV_GPU_UTIL)', series);
    expect(byHost).toEqual(
      expect.arrayContaining([
        { metric: { Hostname: 'a' }, value: 40 },
        { metric: { Hostname: 'b' }, value: 50 },
      ]),
    );
    expect(evaluate('avg(DCGM_FI_DEV_GPU_UTIL) by (Hostname)', series)).toContainEqual({ metric: { Hostname: 'a' }, value: 20 });
    expect(evaluate('count(DCGM_FI_DEV_GPU_UTIL)', series)).toEqual([{ metric: {}, value: 3 }]);
    expect(evaluate('max without (gpu) (DCGM_FI_DEV_GPU_UTIL)', series)).toContainEqual({ metric: { Hostname: 'a' }, value: 30 });
  });

  it('rejects what it does not implement instead of guessing', () => {
    expect(() => evaluate('rate(DCGM_FI_DEV_GPU_UTIL[5m])', series)).toThrow(/parse error/);
    expect(() => evaluate('{gpu=""}', series)).toThrow(/non-empty matcher/);
  });

  describe('over HTTP', () => {
    const p = new FakePrometheus();
    beforeAll(async () => {
      await p.listen('127.0.0.1');
      p.set(series);
    });
    afterAll(() => p.close());

    it('answers GET and POST like the Prometheus HTTP API', async () => {
      const get = await fetch(`${p.url}/api/v1/query?query=${encodeURIComponent('DCGM_FI_DEV_FB_USED')}&time=1700000000`);
      expect(await get.json()).toEqual({
        status: 'success',
        data: { resultType: 'vector', result: [{ metric: series[3].metric, value: [1700000000, '1024'] }] },
      });
      const post = await fetch(`${p.url}/api/v1/query`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ query: 'count(DCGM_FI_DEV_GPU_UTIL)' }),
      });
      const body = (await post.json()) as { data: { result: Array<{ value: [number, string] }> } };
      expect(body.data.result[0].value[1]).toBe('3');
      const bad = await fetch(`${p.url}/api/v1/query?query=${encodeURIComponent('foo(')}`);
      expect(bad.status).toBe(400);
      expect(await bad.json()).toMatchObject({ status: 'error', errorType: 'bad_data' });
    });
  });
});
