export { freeTcpPort, sleep, waitFor, waitUntil } from './wait';
export { productionSources } from './sources';
