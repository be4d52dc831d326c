/**
 * Replicas on one PostgreSQL must share the secret key: a replica whose key differs from the one
 * the store's secrets were sealed with refuses to start and says what to set, instead of
 * answering later with secrets it cannot open.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Postgres, startPostgres } from '@ironlens/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serve } from './serve';

let pg: Postgres;
let dir: string;

beforeAll(async () => {
  pg = await startPostgres();
  dir = mkdtempSync(join(tmpdir(), 'ironlens-replica-key-'));
});

afterAll(() => {
  pg?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('replicas on one PostgreSQL', () => {
  it('a replica with another secret key refuses to start and names IRONLENS_SECRET_KEY; one with the same key starts', async () => {
    const url = await pg.createDatabase();
    const key = randomBytes(32).toString('hex');
    const base = { IRONLENS_DATABASE_URL: url, IPXE_CP_DNSMASQ_RELOAD: 'false', IRONLENS_BOOT_LISTEN: 'off', IRONLENS_CONSOLE_LISTEN: 'off' };
    const lines: string[] = [];
    const first = await serve({ ...base, IRONLENS_DATA_DIR: join(dir, 'a'), IRONLENS_SECRET_KEY: key }, (m) => lines.push(m));
    await first.close();
    const same = await serve({ ...base, IRONLENS_DATA_DIR: join(dir, 'b'), IRONLENS_SECRET_KEY: key }, (m) => lines.push(m));
    await same.close();
    await expect(serve({ ...base, IRONLENS_DATA_DIR: join(dir, 'c'), IRONLENS_SECRET_KEY: randomBytes(32).toString('hex') }, (m) => lines.push(m))).rejects.toThrow(
      'the secret key (IRONLENS_SECRET_KEY, or secret.key in the data dir) is not the one the secrets in the store were sealed with: give every replica the same IRONLENS_SECRET_KEY',
    );
    // Without IRONLENS_SECRET_KEY, a replica creates its own key file: refused the same way.
    await expect(serve({ ...base, IRONLENS_DATA_DIR: join(dir, 'd') }, (m) => lines.push(m))).rejects.toThrow('give every replica the same IRONLENS_SECRET_KEY');
  });
});
