/**
 * The build's refusal of test-only modules (issue 29, finding 12; review 1, M2): a bundle that
 * would carry a module of a package's `testing/` folder (or a `*.test.ts`) is not written. The
 * entry points are this test's own, in `.artifacts/`; the real command's bundle is
 * compiled.test.ts's.
 */
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { artifactPath } from '@ironlens/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildCli } from './build';

let work: string;
beforeAll(() => {
  work = artifactPath('build-refusal');
  mkdirSync(work, { recursive: true });
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** An entry point in `work` that imports `imports` (paths from the repository's root). */
function entry(name: string, imports: string[]): string {
  const file = join(work, `${name}.ts`);
  const lines = imports.map((p, i) => `import * as m${i} from ${JSON.stringify(join('..', '..', p))};\nconsole.log(Object.keys(m${i}).length);`);
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

describe('buildCli', () => {
  it('refuses a bundle that reaches a testing/ module, through an import of an import, and leaves no output', async () => {
    // core's testing/wait.ts, imported by a module the entry imports.
    const helper = entry('helper', ['packages/core/src/testing/wait.ts']);
    const direct = join(work, 'indirect.ts');
    writeFileSync(direct, `import * as h from ${JSON.stringify(helper)};\nconsole.log(Object.keys(h).length);\n`);
    await expect(buildCli(join(work, 'dist-indirect'), direct)).rejects.toThrow(/^the command would carry test-only modules \(an export of a package's index reaches them\): packages\/core\/src\/testing\/wait\.ts$/);
    expect(existsSync(join(work, 'dist-indirect'))).toBe(false);
    // The same without the test-only import builds.
    const clean = entry('clean', ['packages/core/src/errors/index.ts']);
    expect(await buildCli(join(work, 'dist-clean'), clean)).toMatch(/^\.artifacts\/build-refusal-[^:]+\/dist-clean: \d+ files, /);
    expect(readdirSync(join(work, 'dist-clean'))).toContain('main.js');
  }, 120_000);
});
