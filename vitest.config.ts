import { defineConfig } from 'vitest/config';

// One runner for the whole monorepo. Tests sit beside the code as *.test.ts.
// Suites that start real tools (dnsmasq, tgtd, qemu, a Kubernetes control plane)
// live in the same run; they are slow, so the timeouts are generous, and they run
// in forked processes so a crashed tool cannot take the runner with it.
export default defineConfig({
  test: {
    include: ['packages/*/src/**/*.test.ts', 'packages/*/test/**/*.test.ts'],
    exclude: ['**/node_modules/**', '**/dist/**'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 600_000,
    reporters: ['default'],
  },
});
