import { afterEach, describe, expect, it } from 'vitest';
import { type ClustersTestApp, closedPort, kubeconfigWithKey, multipart, startClustersApp } from '../testing/app';
import { ClusterRepository } from '../registry/cluster.repository';
import type { ClustersDb } from '../shared/tables';
import { renderGateway } from './gateway.render';

// The port the authorization hook's EndpointSlice points at (issue 22): the console's port, and
// when the console listens on an ephemeral port (0), the port it bound, given once it listens.
// Until then the hook is reported failed with a catalogued code. The clusters' API servers here are
// a closed port: nothing below needs the cluster.

let t: ClustersTestApp | undefined;

afterEach(async () => {
  await t?.close();
  t = undefined;
});

async function register(app: ClustersTestApp, fields: Record<string, string>): Promise<string> {
  const { payload, headers } = multipart(
    { name: `port-${Math.random().toString(16).slice(2, 8)}`, gatewayProvider: 'envoy-ai-gateway', gatewayAuthzHost: '192.0.2.10', ...fields },
    { content: kubeconfigWithKey(`https://127.0.0.1:${await closedPort()}`).kubeconfig },
  );
  const res = await app.app.inject({ method: 'POST', url: '/api/cluster/clusters', payload, headers });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().cluster.id;
}

const status = async (app: ClustersTestApp, id: string) => (await app.app.inject({ method: 'GET', url: `/api/cluster/clusters/${id}/gateway/status` })).json();

/** The port of the hook's EndpointSlice a reconcile of this registration would apply (null: no hook). */
async function slicePort(app: ClustersTestApp, id: string): Promise<number | null> {
  const row = (await new ClusterRepository().get(app.store.db as unknown as ClustersDb, id))!;
  const r = renderGateway(app.services.gateway.settings.inputs(row)!, app.services.profile);
  const slice = r.authz.find((o) => o.kind === 'EndpointSlice') as { ports?: Array<{ port: number }> } | undefined;
  return slice?.ports?.[0]?.port ?? null;
}

describe('the port of the authorization hook', () => {
  it('is the console listener’s port by default', async () => {
    t = await startClustersApp({ env: { IRONLENS_CONSOLE_LISTEN: '127.0.0.1:8443' } });
    const id = await register(t, {});
    expect(await slicePort(t, id)).toBe(8443);
    expect((await status(t, id)).authz).toMatchObject({ reason: null });
  });

  it('on an ephemeral console port (0): the hook fails with gateway_authz_port_unknown until the bound port is known, then points at it', async () => {
    t = await startClustersApp({ env: { IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0' } });
    const id = await register(t, {});
    expect(await slicePort(t, id)).toBeNull();
    const before = await status(t, id);
    expect(before.authz).toMatchObject({ state: 'failed', reason: expect.stringMatching(/^gateway_authz_port_unknown: /) });
    expect(before.authz.reason).toContain('IRONLENS_GATEWAY_AUTHZ_PORT');
    // What `ironlens serve` does once the console listens.
    t.services.gateway.useConsolePort(41234);
    expect(await slicePort(t, id)).toBe(41234);
    const after = await status(t, id);
    expect(after.authz.state).not.toBe('failed');
    expect(after.authz.reason).toBeNull();
    // gke has no hook: nothing to fail.
    const gke = await register(t, { gatewayProvider: 'gke' });
    expect((await status(t, gke)).authz).toMatchObject({ state: 'disabled', reason: null });
  });

  it('IRONLENS_GATEWAY_AUTHZ_PORT wins over the console’s port, bound or not; a value that is not a port is refused at start', async () => {
    t = await startClustersApp({ env: { IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0', IRONLENS_GATEWAY_AUTHZ_PORT: '9443' } });
    const id = await register(t, {});
    expect(await slicePort(t, id)).toBe(9443);
    t.services.gateway.useConsolePort(41234);
    expect(await slicePort(t, id)).toBe(9443);
    expect((await status(t, id)).authz.reason).toBeNull();
    await expect(startClustersApp({ env: { IRONLENS_GATEWAY_AUTHZ_PORT: '70000' } })).rejects.toThrow(/IRONLENS_GATEWAY_AUTHZ_PORT must be a port/);
  });
});
