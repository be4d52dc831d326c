/**
 * The browser guard's rules, one request each (issue 18 finding 2, issue 33 item 2): a write a
 * browser proves same-origin passes without our header (Lens' wizard uploads its kubeconfig as a
 * plain multipart `fetch`), cross-site writes and rebinding names are refused, and behind a
 * reverse proxy that rewrites `Host` the configured origins, or a trusted proxy's
 * `X-Forwarded-Host`/`-Proto`, say what the browser's own origin is.
 */
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpApp, type HttpAppOptions } from './app';
import { originList } from './browser-guard';

const apps: FastifyInstance[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});

async function guarded(extra: Partial<HttpAppOptions> = {}, guard: HttpAppOptions['browserGuard'] = {}): Promise<FastifyInstance> {
  const app = await createHttpApp({ title: 'guard', docs: false, browserGuard: { hosts: ['console.lab.example'], ...guard }, ...extra });
  app.addContentTypeParser(['multipart/form-data', 'application/x-www-form-urlencoded'], { parseAs: 'string' }, (_req, body, done) => done(null, body));
  app.post('/upload', async () => ({ ok: true }));
  app.delete('/thing', async (req) => ({ body: req.body === undefined ? 'none' : req.body }));
  app.post('/json', async (req) => ({ body: req.body }));
  apps.push(app);
  return app;
}

const HOST = 'console.lab.example:8080';
const MULTIPART = 'multipart/form-data; boundary=x';
const FORM_BODY = '--x\r\nContent-Disposition: form-data; name="name"\r\n\r\nc1\r\n--x--\r\n';

async function post(app: FastifyInstance, headers: Record<string, string>, type = MULTIPART) {
  const r = await app.inject({ method: 'POST', url: '/upload', headers: { host: HOST, 'content-type': type, ...headers }, payload: type === MULTIPART ? FORM_BODY : 'a=b' });
  return { status: r.statusCode, code: r.statusCode === 200 ? 'ok' : (r.json() as { detail: string }).detail && codeOf(r.statusCode, r.body) };
}
/** The catalog code of a refusal, read from its message (renderDetail writes no code for these). */
function codeOf(status: number, body: string): string {
  const detail = (JSON.parse(body) as { detail: string }).detail;
  if (status === 421) return 'host_not_allowed';
  if (detail.includes('another site')) return 'cross_site_request_refused';
  if (detail.includes('X-Ironlens-Request')) return 'request_header_required';
  return `${status} ${detail}`;
}

describe('a browser write proven same-origin passes without X-Ironlens-Request', () => {
  it('a multipart fetch whose Origin is the request’s own (Chromium also says same-origin)', async () => {
    const app = await guarded();
    expect(await post(app, { origin: `http://${HOST}`, 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'cors' })).toEqual({ status: 200, code: 'ok' });
    // Origin alone (a browser without Fetch Metadata) proves it as well.
    expect(await post(app, { origin: `http://${HOST}` })).toEqual({ status: 200, code: 'ok' });
  });

  it('a form body whose only proof is Sec-Fetch-Site: same-origin', async () => {
    const app = await guarded();
    expect(await post(app, { 'sec-fetch-site': 'same-origin' }, 'application/x-www-form-urlencoded')).toEqual({ status: 200, code: 'ok' });
  });

  it('keeps asking for the header when nothing proves the origin: Sec-Fetch-Site none, a navigation without Origin', async () => {
    const app = await guarded();
    expect(await post(app, { 'sec-fetch-site': 'none' })).toEqual({ status: 403, code: 'request_header_required' });
    expect(await post(app, { 'sec-fetch-mode': 'navigate' }, 'application/x-www-form-urlencoded')).toEqual({ status: 403, code: 'request_header_required' });
    expect(await post(app, { 'sec-fetch-site': 'none', 'x-ironlens-request': 'console' })).toEqual({ status: 200, code: 'ok' });
    // curl: no Origin, no Sec-Fetch-*.
    expect(await post(app, {})).toEqual({ status: 200, code: 'ok' });
  });
});

describe('cross-site writes and rebinding names stay refused', () => {
  it('refuses another Origin, Origin null, an Origin on another port, and Sec-Fetch-Site cross-site or same-site', async () => {
    const app = await guarded();
    for (const headers of <Array<Record<string, string>>>[
      { origin: 'http://evil.example' },
      { origin: 'null' },
      { origin: 'http://console.lab.example:9999' },
      { origin: `http://${HOST}.evil.example` },
      { 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-site': 'same-site', origin: `http://${HOST}` },
      // The header does not excuse another site.
      { origin: 'http://evil.example', 'x-ironlens-request': 'x' },
    ]) {
      expect(await post(app, headers), JSON.stringify(headers)).toEqual({ status: 403, code: 'cross_site_request_refused' });
    }
  });

  it('answers 421 to a name it does not serve, whatever the method', async () => {
    const app = await guarded();
    const r = await app.inject({ method: 'POST', url: '/upload', headers: { host: 'rebind.attacker.example:8080', origin: 'http://rebind.attacker.example:8080', 'sec-fetch-site': 'same-origin', 'content-type': MULTIPART }, payload: FORM_BODY });
    expect(r.statusCode).toBe(421);
  });
});

describe('behind a reverse proxy that rewrites Host', () => {
  const behind = { host: '127.0.0.1:8080', origin: 'https://console.lab.example', 'sec-fetch-site': 'same-origin' };

  it('refuses the browser’s Origin until IRONLENS_CONSOLE_ORIGINS names it; then only that origin', async () => {
    expect(await post(await guarded(), behind)).toEqual({ status: 403, code: 'cross_site_request_refused' });
    const app = await guarded({}, { origins: originList('https://console.lab.example, http://10.0.0.5:8443') });
    expect(await post(app, behind)).toEqual({ status: 200, code: 'ok' });
    expect(await post(app, { ...behind, origin: 'http://10.0.0.5:8443' })).toEqual({ status: 200, code: 'ok' });
    expect(await post(app, { ...behind, origin: 'http://console.lab.example' })).toEqual({ status: 403, code: 'cross_site_request_refused' });
    expect(await post(app, { ...behind, origin: 'https://evil.example' })).toEqual({ status: 403, code: 'cross_site_request_refused' });
  });

  it('believes X-Forwarded-Host and -Proto only from a trusted proxy, and checks the forwarded name too', async () => {
    const forwarded = { ...behind, 'x-forwarded-host': 'console.lab.example', 'x-forwarded-proto': 'https' };
    // Not trusted: the headers are anyone's to write.
    expect(await post(await guarded(), forwarded)).toEqual({ status: 403, code: 'cross_site_request_refused' });
    const app = await guarded({ trustProxy: true });
    expect(await post(app, forwarded)).toEqual({ status: 200, code: 'ok' });
    // The scheme the proxy saw is compared: an http page is not the https console.
    expect(await post(app, { ...forwarded, origin: 'http://console.lab.example' })).toEqual({ status: 403, code: 'cross_site_request_refused' });
    // A default port written out is the same origin.
    expect(await post(app, { ...forwarded, 'x-forwarded-host': 'console.lab.example:443' })).toEqual({ status: 200, code: 'ok' });
    // DNS rebinding through the proxy: the forwarded name is not one the console serves.
    expect(await post(app, { ...forwarded, 'x-forwarded-host': 'rebind.attacker.example', origin: 'https://rebind.attacker.example' })).toEqual({ status: 421, code: 'host_not_allowed' });
  });

  it('refuses a setting that is not a list of origins, at start', () => {
    expect(originList(' https://Console.Lab.Example:443/ ,http://a:8080')).toEqual(['https://console.lab.example', 'http://a:8080']);
    for (const bad of ['console.lab.example', 'https://console.lab.example/path', 'ftp://x', 'https://']) expect(() => originList(bad), bad).toThrow(/IRONLENS_CONSOLE_ORIGINS/);
  });
});

describe('a DELETE that says JSON and sends no body (Lens’ wizard Cancel)', () => {
  it('is a DELETE without a body; any other empty JSON body is still a 400, and bad JSON too', async () => {
    const app = await guarded();
    const del = (payload?: string) => app.inject({ method: 'DELETE', url: '/thing', headers: { host: HOST, 'content-type': 'application/json' }, payload });
    const empty = await del();
    expect(empty.statusCode).toBe(200);
    expect(empty.json()).toEqual({ body: 'none' });
    expect((await del('{}')).json()).toEqual({ body: {} });
    expect((await del('{')).statusCode).toBe(400);
    expect((await del('{"__proto__": {"x": 1}}')).statusCode).toBe(400);
    const post = await app.inject({ method: 'POST', url: '/json', headers: { host: HOST, 'content-type': 'application/json' } });
    expect(post.statusCode).toBe(400);
  });
});
