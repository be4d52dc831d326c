#!/usr/bin/env node
// The `ironlens` command. It runs the compiled JavaScript in ../dist (built from the
// TypeScript sources by `npm install`'s prepare step, or `npm run build:cli`). When that
// build is missing, or IRONLENS_FROM_SOURCE=1, it runs the sources through tsx (a slower
// start: every run compiles TypeScript).
import { existsSync } from 'node:fs';

const compiled = new URL('../dist/main.js', import.meta.url);
let main;
if (process.env.IRONLENS_FROM_SOURCE !== '1' && existsSync(compiled)) {
  ({ main } = await import(compiled.href));
} else {
  if (process.env.IRONLENS_FROM_SOURCE !== '1') {
    process.stderr.write(
      '[ironlens] the compiled command (packages/cli/dist) is missing: run `npm run build:cli` (npm install does it).\n' +
        '[ironlens] running the TypeScript sources through tsx meanwhile (slower start).\n',
    );
  }
  const { register } = await import('tsx/esm/api');
  register();
  ({ main } = await import('../src/main.ts'));
}
process.exitCode = await main(process.argv.slice(2));
