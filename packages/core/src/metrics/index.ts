// Prometheus metrics: one registry per process, `/metrics` on each listener.
export { type Counter, type Gauge, type Histogram, Metrics, type MetricsOptions } from './metrics';
