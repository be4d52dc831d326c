/**
 * The ironlens side of the boot storm, in its own process so wrk's load never shares
 * the orchestrator's event loop. Wired as `ironlens serve` wires the provisioning
 * listener: the store in `BENCH_DATA_DIR`, the metal services, `buildMetalApp` (docs,
 * bearer guard, error handling, the metrics of every request), listening on 127.0.0.1 on a free port. Reports
 * `{ port }` over IPC; stops on SIGTERM or when the orchestrator goes away.
 */
import { join } from 'node:path';
import { Metrics, Store } from '@ironlens/core';
import { buildMetalApp, createMetalServices, type MetalDatabase, metalConfigFromEnv } from '@ironlens/metal';
import { BENCH_MIGRATIONS } from './seed';

async function main(): Promise<void> {
  const dir = process.env.BENCH_DATA_DIR;
  if (!dir) throw new Error('BENCH_DATA_DIR is not set');
  const metrics = new Metrics();
  const store = await Store.open<MetalDatabase>({ file: join(dir, 'ironlens.db'), migrations: BENCH_MIGRATIONS, onQuery: metrics.storeQuery });
  const config = metalConfigFromEnv({ IPXE_CP_DNSMASQ_RELOAD: 'false', IPXE_CP_TOKEN: process.env.BENCH_TOKEN ?? 'bench-token' }, dir);
  const services = createMetalServices({ store, config, metrics });
  const app = await buildMetalApp({ services, http: { metrics: { metrics, listener: 'boot', token: config.token } } });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;

  let closing = false;
  const shutdown = async () => {
    if (closing) return;
    closing = true;
    await app.close().catch(() => {});
    await store.close().catch(() => {});
    process.exit(0); // a normal exit, so --cpu-prof writes its profile
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
  process.on('disconnect', shutdown);
  process.send?.({ port });
}

main().catch((err: Error) => {
  process.send?.({ error: err.stack ?? err.message });
  process.exit(1);
});
