export { ARTIFACTS_DIR, artifactPath } from './artifacts';
export { freeTcpPort, sleep, waitFor, waitUntil } from './wait';
export { productionSources } from './sources';
export { dumpDatabase, freshDatabaseUrl, onPostgres, type Postgres, startPostgres, TEST_PG_ENV, testDatabaseEnv, testStoreTarget } from './postgres';
export { type PromSample, parsePrometheusText, sampleValue } from './prometheus';
