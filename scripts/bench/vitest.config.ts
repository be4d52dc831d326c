import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// The benchmark's own checks (the /boot-vars cache it relies on), run apart from the
// monorepo suite: npx vitest run --config scripts/bench/vitest.config.ts
export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  test: {
    include: ['scripts/bench/**/*.test.ts'],
    pool: 'forks',
    testTimeout: 60_000,
  },
});
