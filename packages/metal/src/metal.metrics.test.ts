import { Metrics } from '@ironlens/core';
import { parsePrometheusText, sampleValue } from '@ironlens/core/testing';
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildMetalApp } from './app';
import { FakeAgent } from './testing/fake-agent';
import { type MetalFixture, newMetalFixture } from './testing/fixture';

let f: MetalFixture;
let metrics: Metrics;
let app: FastifyInstance;
const AUTH = { authorization: 'Bearer t0ken' };
const call = (method: string, url: string, payload?: unknown) => app.inject({ method: method as 'GET', url, payload: payload as object, headers: AUTH });
const scrape = async () => {
  const r = await call('GET', '/metrics');
  expect(r.statusCode).toBe(200);
  return { text: r.body, samples: parsePrometheusText(r.body) };
};

beforeEach(async () => {
  metrics = new Metrics({ processMetrics: false });
  f = await newMetalFixture({ IPXE_CP_TOKEN: 't0ken', IPXE_CP_AGENT_TIMEOUT: '2' }, { metrics });
  app = await buildMetalApp({ services: f.services, http: { metrics: { metrics, listener: 'boot', token: 't0ken' } } });
});
afterEach(async () => {
  await app.close();
  await f.close();
});

describe('metrics of the boot control plane', () => {
  it('counts /boot-vars answers from the cache and from the store', async () => {
    await app.inject({ url: '/devices/report?mac=000c29000001' });
    expect((await call('POST', '/workers', { worker_id: 'w1', mac: '000c29000001' })).statusCode).toBe(200);
    const before = (await scrape()).samples;
    const first = await app.inject({ url: '/boot-vars?mac=00:0c:29:00:00:01' });
    const second = await app.inject({ url: '/boot-vars?mac=00:0c:29:00:00:01' });
    const third = await app.inject({ url: '/boot-vars?mac=00:0c:29:00:00:01' });
    expect(second.body).toBe(first.body);
    expect(third.body).toBe(first.body);
    expect(first.body).toContain('set menu-default reboot');
    const { samples, text } = await scrape();
    expect(sampleValue(samples, 'ironlens_boot_vars_cache_misses_total') - sampleValue(before, 'ironlens_boot_vars_cache_misses_total')).toBe(1);
    expect(sampleValue(samples, 'ironlens_boot_vars_cache_hits_total') - sampleValue(before, 'ironlens_boot_vars_cache_hits_total')).toBe(2);
    expect(sampleValue(samples, 'ironlens_http_requests_total', { listener: 'boot', method: 'GET', route: '/boot-vars', status: '200' })).toBe(3);
    expect(sampleValue(samples, 'ironlens_http_requests_total', { route: '/devices/report', status: '200' })).toBe(1);
    expect(text).not.toMatch(/00:0c:29|000c29/);
    // Counted once: a scrape with no answer since shows the same figures.
    const again = (await scrape()).samples;
    expect(sampleValue(again, 'ironlens_boot_vars_cache_hits_total')).toBe(sampleValue(samples, 'ironlens_boot_vars_cache_hits_total'));
    expect(sampleValue(again, 'ironlens_boot_vars_cache_misses_total')).toBe(sampleValue(samples, 'ironlens_boot_vars_cache_misses_total'));
  });

  it('reports devices and workers by state, read from the store at scrape time', async () => {
    for (const mac of ['000c29000001', '000c29000002', '000c29000003']) await app.inject({ url: `/devices/report?mac=${mac}` });
    await call('POST', '/workers', { worker_id: 'w1', mac: '000c29000001' });
    await call('POST', '/workers', { worker_id: 'w2' });
    await call('DELETE', '/devices/000c29000003');
    const { samples } = await scrape();
    expect(sampleValue(samples, 'ironlens_devices', { state: 'pooled' })).toBe(1);
    expect(sampleValue(samples, 'ironlens_devices', { state: 'bound' })).toBe(1);
    expect(sampleValue(samples, 'ironlens_devices', { state: 'revoked' })).toBe(1);
    expect(sampleValue(samples, 'ironlens_workers', { state: 'registered' })).toBe(2);
    expect(samples.filter((s) => s.name === 'ironlens_workers').map((s) => s.labels.state).sort()).toEqual(['installing', 'ready', 'registered']);
    expect(sampleValue(samples, 'ironlens_http_requests_total', { method: 'DELETE', route: '/devices/:mac', status: '200' })).toBe(1);
  });

  it('counts hosts-file renders and dnsmasq reload failures', async () => {
    await app.inject({ url: '/devices/report?mac=000c29000001' });
    await app.inject({ url: '/devices/report?mac=000c29000002' });
    await call('POST', '/workers', { worker_id: 'w1', mac: '000c29000001' });
    await call('POST', '/workers', { worker_id: 'w2' });
    const before = (await scrape()).samples;
    f.reloader.failWith = 'no such container';
    expect((await call('POST', '/devices/000c29000002/bind?worker_id=w2')).statusCode).toBe(500);
    const { samples } = await scrape();
    const delta = (name: string) => sampleValue(samples, name) - sampleValue(before, name);
    expect(delta('ironlens_dnsmasq_hosts_renders_total')).toBe(1);
    expect(delta('ironlens_dnsmasq_reload_failures_total')).toBe(1);
    expect(delta('ironlens_dnsmasq_reloads_total')).toBe(0);
    expect(sampleValue(samples, 'ironlens_dnsmasq_hosts_entries')).toBe(2);
    expect(sampleValue(samples, 'ironlens_http_requests_total', { method: 'POST', route: '/devices/:mac/bind', status: '500' })).toBe(1);
  });

  it('reports each enabled agent up or down by its id; a disabled agent is not probed', async () => {
    const live = await new FakeAgent().start();
    try {
      expect((await call('POST', '/agents', { id: 'store-1', base_url: live.url, role: { disk: true } })).statusCode).toBe(201);
      expect((await call('POST', '/agents', { id: 'store-2', base_url: 'http://127.0.0.1:9', role: { disk: true } })).statusCode).toBe(201);
      expect((await call('POST', '/agents', { id: 'store-3', base_url: 'http://127.0.0.1:9', enabled: false, role: { disk: true } })).statusCode).toBe(201);
      const { samples } = await scrape();
      expect(samples.filter((s) => s.name === 'ironlens_agent_up')).toEqual([
        { name: 'ironlens_agent_up', labels: { agent: 'store-1' }, value: 1 },
        { name: 'ironlens_agent_up', labels: { agent: 'store-2' }, value: 0 },
      ]);
      await live.stop();
      expect((await scrape()).samples.filter((s) => s.name === 'ironlens_agent_up').map((s) => [s.labels.agent, s.value])).toEqual([
        ['store-1', 0],
        ['store-2', 0],
      ]);
    } finally {
      await live.stop();
    }
  });
});
