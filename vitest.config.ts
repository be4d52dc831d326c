import { defineConfig } from 'vitest/config';

// One runner for the whole monorepo. Tests sit beside the code as *.test.ts.
// Suites that start real tools (dnsmasq, tgtd, qemu, a Kubernetes control plane)
// live in the same run; they are slow, so the timeouts are generous, and they run
// in forked processes so a crashed tool cannot take the runner with it.
//
// Two projects: `sqlite` runs every test on the embedded store; `postgres` runs again the
// suites that go through the store, on a real PostgreSQL that its globalSetup starts
// (scripts/vitest-postgres.setup.ts); they take their store from `testStoreTarget` /
// `testDatabaseEnv` (@ironlens/core/testing). Left out: the slow end-to-end suites that run
// once (qemu netboot and the diskless Debian end to end, Chromium `*.browser.test.ts`, the compiled CLI, the Kubespray virtualenv)
// and suites that never reach the store (domain rules, adapters, schemas, page serving).
const POSTGRES_SUITES = [
  'packages/core/src/jobs/**/*.test.ts',
  'packages/core/src/audit/operations.test.ts',
  'packages/core/src/store/**/*.test.ts',
  'packages/core/src/secrets/**/*.test.ts',
  'packages/core/src/metrics/**/*.test.ts',
  'packages/core/src/auth/**/*.test.ts',
  'packages/metal/src/repositories/**/*.test.ts',
  'packages/metal/src/integration/**/*.test.ts',
  'packages/metal/src/routes/**/*.test.ts',
  'packages/metal/src/services/**/*.test.ts',
  'packages/metal/src/adapters/dnsmasq-detect.adapter.test.ts',
  'packages/clusters/src/clusters.api.test.ts',
  'packages/clusters/src/clusters.kube.test.ts',
  'packages/clusters/src/gateway/gateway.api.test.ts',
  'packages/clusters/src/gateway/gateway.authz-port.test.ts',
  'packages/clusters/src/gateway/gateway-authz.test.ts',
  'packages/clusters/src/gateway/gateway.rules.test.ts',
  'packages/clusters/src/clusters.hardening.test.ts',
  'packages/clusters/src/clusters.warnings.test.ts',
  'packages/clusters/src/api/answers.test.ts',
  'packages/clusters/src/deployments/deployments.api.test.ts',
  'packages/clusters/src/bootstrap/bootstrap.{api,repository,restart}.test.ts',
  'packages/kind/src/kind.api.test.ts',
  'packages/cli/src/{serve,serve.hardening,serve-metrics,secrets,walkthrough,bootstrap-register,serve.hostile-cluster,bootstrap-workers,host-reporter,access}.test.ts',
];

export default defineConfig({
  test: {
    exclude: ['**/node_modules/**', '**/dist/**'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 600_000,
    reporters: ['default'],
    projects: [
      {
        extends: true,
        test: { name: 'sqlite', include: ['packages/*/src/**/*.test.ts', 'packages/*/test/**/*.test.ts', 'scripts/*.test.ts'] },
      },
      {
        extends: true,
        test: { name: 'postgres', include: POSTGRES_SUITES, globalSetup: ['scripts/vitest-postgres.setup.ts'], env: { IRONLENS_TEST_STORE: 'postgres' } },
      },
    ],
  },
});
