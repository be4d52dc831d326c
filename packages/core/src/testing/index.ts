export { ARTIFACTS_DIR, artifactPath } from './artifacts';
export { freeTcpPort, sleep, waitFor, waitUntil } from './wait';
export { productionSources } from './sources';
export { type PromSample, parsePrometheusText, sampleValue } from './prometheus';
