import { exec, openChangeFeed, partOf } from '@ironlens/core';
import { announceEverythingChanged, createMetalServices, DetectingReloader, metalConfigFromEnv, reloaderFor } from '@ironlens/metal';
import type { Env } from '@ironlens/core';
import { dataDirFrom, openStore } from './serve';
import { AGENT_TOKEN_RESERVED_ENV } from './settings';

/**
 * `ironlens import DIR` / `ironlens export DIR`: the old file layout in or out of the store.
 * An import re-renders dhcp-hosts.conf and reloads dnsmasq (a failed reload is a warning:
 * the store is already written). Into a PostgreSQL database that replicas share, it writes no
 * hosts file: it tells the replicas, which clear their caches, and their elected writers render.
 */
export async function transferLayout(env: Env, direction: 'import' | 'export', dir: string, opts: { replace?: boolean; bmcPasswords?: boolean } = {}): Promise<unknown> {
  const config = metalConfigFromEnv(env, dataDirFrom(env));
  const store = await openStore(env);
  const changes = await openChangeFeed(store).catch(async (err) => {
    await store.close();
    throw err;
  });
  try {
    const reloader = reloaderFor(config, exec);
    const metal = createMetalServices({ store: partOf(store), config, reloader, changes, reservedEnv: AGENT_TOKEN_RESERVED_ENV });
    if (direction === 'export') return await metal.layout.export(dir, { bmcPasswords: opts.bmcPasswords });
    const out = await metal.layout.import(dir, { replace: opts.replace });
    announceEverythingChanged(changes);
    if (changes.shared) return out;
    if (reloader instanceof DetectingReloader) {
      const d = await reloader.detect();
      if (!d.reloader) process.stderr.write(`[ironlens] ${d.summary}\n`);
    }
    await metal.dhcp.sync().catch((err: Error) => process.stderr.write(`[ironlens] warning: ${err.message}\n`));
    return out;
  } finally {
    await changes.close();
    await store.close();
  }
}
