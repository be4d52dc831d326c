/**
 * `scripts/check-imports.ts`, part of `npm run check` (review 1, M3): over an import graph of its
 * own (a tree of `packages/<name>/src` in a temporary folder), it names every circle, every import
 * back up between core's levels, every import between two features of clusters and every folder
 * without a level; and the repository's own graph has none.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkAll, checkPackage, specifiers } from './check-imports';

let root: string;
/** Writes `files` (path under `packages/` → text) into the fixture. */
function tree(files: Record<string, string>): void {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, 'packages', path)), { recursive: true });
    writeFileSync(join(root, 'packages', path), text);
  }
}

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'ironlens-check-imports-'));
  tree({
    // A package without levels: circles only.
    'x/src/a.ts': "import { b } from './b';\nexport const a = b;\n",
    'x/src/b.ts': "export { c as b } from './c';\n",
    'x/src/c.ts': "export const c = () => import('./a');\n",
    'x/src/self.ts': "import type { S } from './self';\nexport type T = S;\n",
    'x/src/types/t1.ts': "import type { T2 } from './t2';\nexport interface T1 { t: T2 }\n",
    'x/src/types/t2.ts': "import type { T1 } from './t1';\nexport interface T2 { t?: T1 }\n",
    // Neither a test nor a comment makes a circle.
    'x/src/d.ts': "// import { a } from './e';\n/* import { a } from './e'; */\nexport const d = 1;\n",
    'x/src/e.ts': "import { d } from './d';\nexport const e = d;\n",
    'x/src/d.test.ts': "import { e } from './e';\nimport { d } from './d';\nconsole.log(d, e);\n",
    // core: store (level 2) may import errors (level 0), not auth (level 6); a folder with no level.
    'core/src/errors/index.ts': 'export const E = 1;\n',
    'core/src/auth/index.ts': "import { E } from '../errors';\nexport const A = E;\n",
    'core/src/store/index.ts': "import { E } from '../errors/index';\nimport { A } from '../auth';\nexport const S = E + A;\n",
    'core/src/gadgets/g.ts': "import { E } from '../errors';\nexport const G = E;\n",
    // clusters: a feature imports another feature (sideways), and the registry (below it: fine).
    'clusters/src/registry/r.ts': 'export const R = 1;\n',
    'clusters/src/overview/o.ts': "import { R } from '../registry/r';\nimport { W } from '../software/s';\nexport const O = R + W;\n",
    'clusters/src/software/s.ts': "import { R } from '../registry/r';\nexport const W = R;\n",
  });
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('check-imports', () => {
  it('finds the relative specifiers of imports, re-exports, type imports and import(), not those in comments', () => {
    expect(specifiers("import a from './a';\nexport * from \"./b\";\nimport type { C } from './c';\nconst d = await import('./d');\nimport './e';\nimport x from 'pkg';\n// import f from './f';\n")).toEqual(['./a', './b', './c', './e', './d']);
  });

  it('names each circle of a package (type-only ones and a file importing itself included), not one through a test or a comment', () => {
    expect(checkPackage('x', root)).toEqual([
      { pkg: 'x', kind: 'circle', files: ['packages/x/src/a.ts', 'packages/x/src/b.ts', 'packages/x/src/c.ts'], detail: 'import circle: a.ts → b.ts → c.ts' },
      { pkg: 'x', kind: 'circle', files: ['packages/x/src/self.ts'], detail: 'import circle: self.ts' },
      { pkg: 'x', kind: 'circle', files: ['packages/x/src/types/t1.ts', 'packages/x/src/types/t2.ts'], detail: 'import circle: types/t1.ts → types/t2.ts' },
    ]);
  });

  it("names an import back up between core's levels, and a folder with no level", () => {
    expect(checkPackage('core', root)).toEqual([
      { pkg: 'core', kind: 'unlisted', files: ['packages/core/src/gadgets/g.ts'], detail: 'src/gadgets/ has no level in scripts/check-imports.ts LAYERS.core' },
      { pkg: 'core', kind: 'up', files: ['packages/core/src/store/index.ts', 'packages/core/src/auth/index.ts'], detail: 'store/index.ts imports auth/index.ts: auth/ is above store/' },
    ]);
  });

  it('names an import between two features of clusters; one down to the registry is fine', () => {
    expect(checkPackage('clusters', root)).toEqual([
      { pkg: 'clusters', kind: 'sideways', files: ['packages/clusters/src/overview/o.ts', 'packages/clusters/src/software/s.ts'], detail: 'overview/o.ts imports software/s.ts: overview/ and software/ are features of one level' },
    ]);
  });

  it("finds nothing in the repository's own packages", () => {
    expect(checkAll()).toEqual([]);
  });
});
