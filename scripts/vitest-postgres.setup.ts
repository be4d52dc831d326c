import { startPostgres, TEST_PG_ENV } from '@ironlens/core/testing';

// globalSetup of the suite's PostgreSQL run (vitest project `postgres`): one throw-away
// PostgreSQL for the whole run; every test file takes fresh databases from it
// (`testStoreTarget`, `testDatabaseEnv` in @ironlens/core/testing).
export default async function setup(): Promise<() => void> {
  const pg = await startPostgres();
  process.env[TEST_PG_ENV] = pg.url;
  return () => pg.stop();
}
