/**
 * `/metrics` of `ironlens serve` as an operator's Prometheus sees it: real listeners, a real
 * dnsmasq reloaded through its pid file (then stopped, so a reload fails), a real storage
 * agent on tgtd (up) beside an address nothing answers (down). Every call is real HTTP.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type AgentOnTgtd, startAgentOnTgtd } from '@ironlens/agent/testing';
import { type PromSample, parsePrometheusText, sampleValue, testDatabaseEnv, waitFor, waitUntil } from '@ironlens/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Running, serve } from './serve';

const CP_TOKEN = 'cp-metrics-token';
const CONSOLE_TOKEN = 'console-metrics-token';
const AGENT_TOKEN = 'agent-metrics-token';
const MAC_1 = '52:54:00:0a:00:01';
const MAC_2 = '52:54:00:0a:00:02';

let dir: string;
let dnsmasq: ChildProcess | undefined;
let agent: AgentOnTgtd | undefined;
let running: Running;

async function call(base: string, method: string, path: string, token?: string, body?: unknown): Promise<Response> {
  return fetch(base + path, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function scrape(base: string, token: string): Promise<{ text: string; samples: PromSample[] }> {
  const res = await call(base, 'GET', '/metrics', token);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
  const text = await res.text();
  return { text, samples: parsePrometheusText(text) };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ironlens-metrics-'));
  // dnsmasq drops root for its own user: the hosts file must be readable by it.
  chmodSync(dir, 0o755);
  const hosts = join(dir, 'dhcp-hosts.conf');
  const pidFile = join(dir, 'dnsmasq.pid');
  writeFileSync(hosts, '');
  // DNS and DHCP off (no port, no range): a dnsmasq that holds the hosts file and answers SIGHUP.
  dnsmasq = spawn('dnsmasq', ['--keep-in-foreground', '--conf-file=/dev/null', '--port=0', `--dhcp-hostsfile=${hosts}`, `--pid-file=${pidFile}`, `--log-facility=${join(dir, 'dnsmasq.log')}`], {
    stdio: 'ignore',
  });
  const spawnError = new Promise<Error>((resolve) => dnsmasq?.once('error', resolve));
  await Promise.race([
    waitUntil('dnsmasq pid file', () => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() !== ''),
    spawnError.then((e) => {
      throw new Error(`dnsmasq did not start (apt-get install dnsmasq): ${e.message}`);
    }),
  ]);
  agent = await startAgentOnTgtd({ token: AGENT_TOKEN, tmpPrefix: 'ironlens-metrics-agent-' });
  running = await serve(
    {
      ...(await testDatabaseEnv()),
      IRONLENS_DATA_DIR: join(dir, 'data'),
      IRONLENS_BOOT_LISTEN: '127.0.0.1:0',
      IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0',
      IPXE_CP_TOKEN: CP_TOKEN,
      IRONLENS_CONSOLE_TOKEN: CONSOLE_TOKEN,
      IPXE_CP_DNSMASQ_HOSTS_FILE: hosts,
      IPXE_CP_DNSMASQ_PID_FILE: pidFile,
      IPXE_CP_AGENT_TIMEOUT: '2',
      // No kind on this PATH: a creation job of the console's kind panel starts and fails at once.
      PATH: join(dir, 'empty-bin'),
    },
    () => {},
  );
}, 60_000);

afterAll(async () => {
  await running?.close();
  await agent?.stop();
  if (dnsmasq && dnsmasq.exitCode === null) {
    const exited = new Promise((r) => dnsmasq?.once('exit', r));
    dnsmasq.kill('SIGTERM');
    await exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

describe('ironlens serve /metrics', () => {
  it('is behind each listener’s own bearer token, and says the metrics content type', async () => {
    const { boot, console: consoleUrl } = running.urls;
    for (const [base, wrong] of [
      [boot, CONSOLE_TOKEN],
      [consoleUrl, CP_TOKEN],
    ]) {
      const anonymous = await call(base, 'GET', '/metrics');
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.get('www-authenticate')).toBe('Bearer');
      expect((await call(base, 'GET', '/metrics', wrong)).status).toBe(401);
    }
    await scrape(boot, CP_TOKEN);
    await scrape(consoleUrl, CONSOLE_TOKEN);
  });

  it('moves the counters an operator watches by the right amounts, labelled by route pattern, never by MAC', async () => {
    const boot = running.urls.boot;
    const before = (await scrape(boot, CP_TOKEN)).samples;

    // Two machines report; one worker is bound at creation (dnsmasq reloaded), one is not.
    expect((await call(boot, 'GET', `/devices/report?mac=${MAC_1}`)).status).toBe(200);
    expect((await call(boot, 'GET', `/devices/report?mac=${MAC_2}`)).status).toBe(200);
    expect((await call(boot, 'POST', '/workers', CP_TOKEN, { worker_id: 'w1', mac: MAC_1 })).status).toBe(200);
    expect((await call(boot, 'POST', '/workers', CP_TOKEN, { worker_id: 'w2' })).status).toBe(200);
    expect(readFileSync(join(dir, 'dhcp-hosts.conf'), 'utf8')).toBe(`${MAC_1},w1,infinite\n`);

    // The first /boot-vars after a write reads the store; the next two are answered from the cache.
    const first = await (await call(boot, 'GET', `/boot-vars?mac=${MAC_1}`)).text();
    expect(first).toContain('# boot vars for w1');
    for (let i = 0; i < 2; i++) expect(await (await call(boot, 'GET', `/boot-vars?mac=${MAC_1}`)).text()).toBe(first);

    // Agents: a real one (up), one at an address nothing answers (down).
    expect((await call(boot, 'POST', '/agents', CP_TOKEN, { id: 'store-1', base_url: agent?.url, token: AGENT_TOKEN, role: { disk: true } })).status).toBe(201);
    expect((await call(boot, 'POST', '/agents', CP_TOKEN, { id: 'store-2', base_url: 'http://127.0.0.1:9', role: { disk: true } })).status).toBe(201);

    // dnsmasq stops: the next bind writes the file and its reload fails (500, dnsmasq_reload_failed).
    const exited = new Promise((r) => dnsmasq?.once('exit', r));
    dnsmasq?.kill('SIGTERM');
    await exited;
    const bind = await call(boot, 'POST', `/devices/${MAC_2}/bind?worker_id=w2`, CP_TOKEN);
    expect(bind.status).toBe(500);
    expect(readFileSync(join(dir, 'dhcp-hosts.conf'), 'utf8')).toBe(`${MAC_1},w1,infinite\n${MAC_2},w2,infinite\n`);

    const { text, samples } = await scrape(boot, CP_TOKEN);
    const delta = (name: string, labels: Record<string, string> = {}) => sampleValue(samples, name, labels) - sampleValue(before, name, labels);
    const http = (method: string, route: string, status: string) => delta('ironlens_http_requests_total', { listener: 'boot', method, route, status });

    expect(http('GET', '/devices/report', '200')).toBe(2);
    expect(http('POST', '/workers', '200')).toBe(2);
    expect(http('GET', '/boot-vars', '200')).toBe(3);
    expect(http('POST', '/agents', '201')).toBe(2);
    expect(http('POST', '/devices/:mac/bind', '500')).toBe(1);
    expect(delta('ironlens_http_request_duration_seconds_count', { listener: 'boot', method: 'POST', route: '/devices/:mac/bind', status: '500' })).toBe(1);

    expect(delta('ironlens_boot_vars_cache_misses_total')).toBe(1);
    expect(delta('ironlens_boot_vars_cache_hits_total')).toBe(2);

    // Creating w1 bound to MAC_1 rendered and reloaded; w2 (no MAC) changed no binding; the bind rendered, and its reload failed.
    expect(delta('ironlens_dnsmasq_hosts_renders_total')).toBe(2);
    expect(delta('ironlens_dnsmasq_reloads_total')).toBe(1);
    expect(delta('ironlens_dnsmasq_reload_failures_total')).toBe(1);
    expect(sampleValue(samples, 'ironlens_dnsmasq_hosts_entries')).toBe(2);

    expect(sampleValue(samples, 'ironlens_devices', { state: 'bound' })).toBe(2);
    expect(sampleValue(samples, 'ironlens_devices', { state: 'pooled' })).toBe(0);
    expect(sampleValue(samples, 'ironlens_workers', { state: 'registered' })).toBe(2);
    expect(samples.filter((s) => s.name === 'ironlens_agent_up').map((s) => [s.labels.agent, s.value])).toEqual([
      ['store-1', 1],
      ['store-2', 0],
    ]);

    expect(delta('ironlens_store_query_duration_seconds_count', { operation: 'insert' })).toBeGreaterThanOrEqual(4);
    expect(delta('ironlens_store_query_duration_seconds_count', { operation: 'select' })).toBeGreaterThan(0);
    expect(sampleValue(samples, 'process_resident_memory_bytes')).toBeGreaterThan(0);

    // No MAC (in any spelling), worker hostname in a label, token or query string.
    const lower = text.toLowerCase();
    for (const secretOrId of [MAC_1, MAC_2, '52540', CP_TOKEN, AGENT_TOKEN, CONSOLE_TOKEN, 'worker_id=', 'mac=']) expect(lower).not.toContain(secretOrId);
    const routes = new Set(samples.filter((s) => s.name === 'ironlens_http_requests_total').map((s) => s.labels.route));
    for (const route of routes) expect(route === 'unmatched' || route.startsWith('/'), route).toBe(true);
  });

  it('serves one process registry on the console listener too, with its own listener label', async () => {
    const consoleUrl = running.urls.console;
    const before = (await scrape(consoleUrl, CONSOLE_TOKEN)).samples;
    expect((await call(consoleUrl, 'GET', `/api/metal/devices/${MAC_1}`, CONSOLE_TOKEN)).status).toBe(200);
    expect((await call(consoleUrl, 'GET', '/kind/api/v1/jobs?limit=5', CONSOLE_TOKEN)).status).toBe(200);
    const { samples } = await scrape(consoleUrl, CONSOLE_TOKEN);
    const delta = (labels: Record<string, string>) => sampleValue(samples, 'ironlens_http_requests_total', labels) - sampleValue(before, 'ironlens_http_requests_total', labels);
    expect(delta({ listener: 'console', method: 'GET', route: '/api/metal/*', status: '200' })).toBe(1);
    expect(delta({ listener: 'console', method: 'GET', route: '/kind/api/v1/jobs', status: '200' })).toBe(1);
    expect(delta({ listener: 'console', method: 'GET', route: '/metrics', status: '200' })).toBe(1);
    // The same process: the boot listener's series and the store's gauges are here as well.
    expect(sampleValue(samples, 'ironlens_devices', { state: 'bound' })).toBe(2);
    expect(samples.some((s) => s.labels.listener === 'boot')).toBe(true);
  });

  it('counts a job of the console’s kind panel by kind and outcome, with its duration', async () => {
    const consoleUrl = running.urls.console;
    const created = await call(consoleUrl, 'POST', '/kind/api/v1/clusters', CONSOLE_TOKEN, { name: 'dev', workers: 0 });
    expect(created.status).toBe(202);
    const jobId = (await created.json()).job_id as string;
    const job = await waitFor(
      'the creation job to end',
      async () => (await call(consoleUrl, 'GET', `/kind/api/v1/jobs/${jobId}`, CONSOLE_TOKEN)).json(),
      (j) => j.status !== 'queued' && j.status !== 'running',
    );
    expect(job.status).toBe('failed');
    expect(job.error).toContain('kind is not installed');
    const { samples, text } = await scrape(consoleUrl, CONSOLE_TOKEN);
    expect(sampleValue(samples, 'ironlens_jobs_finished_total', { kind: 'kind.create_cluster', outcome: 'failed' })).toBe(1);
    expect(sampleValue(samples, 'ironlens_jobs_finished_total', { kind: 'kind.create_cluster', outcome: 'success' })).toBe(0);
    expect(sampleValue(samples, 'ironlens_job_duration_seconds_count', { kind: 'kind.create_cluster', outcome: 'failed' })).toBe(1);
    expect(sampleValue(samples, 'ironlens_jobs_running', { kind: 'kind.create_cluster' })).toBe(0);
    // The store's view (every replica's jobs): the failed job, none active.
    expect(sampleValue(samples, 'ironlens_jobs', { kind: 'kind.create_cluster', state: 'failed' })).toBe(1);
    expect(samples.filter((s) => s.name === 'ironlens_jobs' && s.labels.state === 'running')).toEqual([]);
    expect(text).not.toContain(jobId);
  });

  it('is served by the storage agent too, behind its token', async () => {
    const url = agent?.url as string;
    expect((await call(url, 'GET', '/metrics')).status).toBe(401);
    expect((await call(url, 'GET', '/healthz')).status).toBe(200);
    const { samples } = await scrape(url, AGENT_TOKEN);
    // /healthz was probed by the scrape of the provisioning listener, and just now.
    expect(sampleValue(samples, 'ironlens_http_requests_total', { listener: 'agent', method: 'GET', route: '/healthz', status: '200' })).toBeGreaterThanOrEqual(2);
    expect(sampleValue(samples, 'process_resident_memory_bytes')).toBeGreaterThan(0);
  });
});
