export { ARTIFACTS_DIR, artifactPath } from './artifacts';
export { type AnswerCheck, type AnswerDrift, answerCheck } from './answers';
export { dumpDatabase, freshDatabaseUrl, onPostgres, type Postgres, startPostgres, TEST_PG_ENV, TEST_STORE_ENV, testDatabaseEnv, testStoreTarget } from './postgres';
export { type PromSample, parsePrometheusText, sampleValue } from './prometheus';
export { productionSources } from './sources';
export { freeTcpPort, sleep, waitFor, waitUntil } from './wait';
