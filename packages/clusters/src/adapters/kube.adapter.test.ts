import { createServer, type Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { ClientNodeKube, KubeApiError } from './kube.adapter';

// A read answered 429 (a custom resource's watch cache still initializing: "storage is
// (re)initializing", or API priority and fairness) is tried again, as client-go does (issue 28:
// a deployment's delete and a cluster's delete list such resources).

let server: Server | undefined;
afterEach(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

async function apiServer(tooMany: number): Promise<{ url: string; hits: () => number }> {
  let hits = 0;
  server = createServer((req, res) => {
    hits++;
    if (hits <= tooMany) {
      res.writeHead(429, { 'content-type': 'application/json' }).end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'TooManyRequests', code: 429, message: 'storage is (re)initializing' }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ kind: 'NodeList', apiVersion: 'v1', metadata: {}, items: [{ metadata: { name: 'n1' } }] }));
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
  const a = server.address();
  return { url: `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`, hits: () => hits };
}

const kubeconfig = (url: string) => `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "${url}", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`;

describe('ClientNodeKube and 429', () => {
  it('reads again after a 429, up to three times', async () => {
    const s = await apiServer(3);
    const kube = new ClientNodeKube(kubeconfig(s.url), { proxy: { mode: 'none' } as never, timeoutMs: 5000, allowLinkLocal: true });
    expect((await kube.listNodes()).map((n) => n.metadata?.name)).toEqual(['n1']);
    expect(s.hits()).toBe(4);
    kube.close();
  });

  it('answers the 429 when it lasts', async () => {
    const s = await apiServer(10);
    const kube = new ClientNodeKube(kubeconfig(s.url), { proxy: { mode: 'none' } as never, timeoutMs: 5000, allowLinkLocal: true });
    const err = await kube.listNodes().catch((e) => e);
    expect(err).toBeInstanceOf(KubeApiError);
    expect(err.status).toBe(429);
    expect(s.hits()).toBe(4);
    kube.close();
  });
});

// Discovery is kept per connection; a kind its kept list lacks (a CRD established after the list
// was read: the gateway applies its CRDs, then a GatewayClass of that group, before the API server
// lists HTTPRoute) is looked up again, not "not served" for the connection's life (issue 28: a
// deployment's HTTPRoute, applied on the connection the gateway's reconcile had used).
describe('ClientNodeKube and discovery', () => {
  it('finds a kind served after the group/version’s resources were first read', async () => {
    const kinds = [{ name: 'gatewayclasses', kind: 'GatewayClass', namespaced: false }];
    let discoveries = 0;
    server = createServer((req, res) => {
      const json = (code: number, body: unknown) => res.writeHead(code, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (req.url === '/apis/gateway.networking.k8s.io/v1') {
        discoveries++;
        return json(200, { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: 'gateway.networking.k8s.io/v1', resources: kinds });
      }
      if (req.url === '/apis/gateway.networking.k8s.io/v1/gatewayclasses/c') return json(200, { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'GatewayClass', metadata: { name: 'c' } });
      if (req.url === '/apis/gateway.networking.k8s.io/v1/namespaces/ns/httproutes/r') return json(200, { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'HTTPRoute', metadata: { name: 'r', namespace: 'ns' } });
      json(404, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404, message: 'not found' });
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
    const a = server.address();
    const kube = new ClientNodeKube(kubeconfig(`http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`), { proxy: { mode: 'none' } as never, timeoutMs: 5000, allowLinkLocal: true });
    expect((await kube.getObject('gateway.networking.k8s.io/v1', 'GatewayClass', 'c'))?.metadata.name).toBe('c');
    // A kept list that has the kind is not read again.
    expect((await kube.getObject('gateway.networking.k8s.io/v1', 'GatewayClass', 'c'))?.metadata.name).toBe('c');
    expect(discoveries).toBe(1);
    kinds.push({ name: 'httproutes', kind: 'HTTPRoute', namespaced: true });
    expect((await kube.getObject('gateway.networking.k8s.io/v1', 'HTTPRoute', 'r', 'ns'))?.metadata.name).toBe('r');
    expect((await kube.listObjects('gateway.networking.k8s.io/v1', 'Nothing')).length).toBe(0);
    kube.close();
  });
});
