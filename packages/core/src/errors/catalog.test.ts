import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { productionSources } from '../testing';
import { errorCatalog } from './catalog';
import { renderErrorCatalogDoc } from './catalog-doc';

const repo = fileURLToPath(new URL('../../../../', import.meta.url));

describe('error catalog', () => {
  it('docs/errors.md is exactly what scripts/gen-errors-doc.ts writes', () => {
    const doc = readFileSync(join(repo, 'docs/errors.md'), 'utf8');
    expect(doc, 'run: node --import tsx scripts/gen-errors-doc.ts').toBe(renderErrorCatalogDoc());
  });

  it('renders each code with its own status and message', () => {
    const doc = renderErrorCatalogDoc({ thing_broken: { status: 418, message: 'a teapot' } });
    expect(doc).toContain('\n| `thing_broken` | 418 | a teapot |\n');
  });

  it('holds no code that no production source uses', () => {
    const catalogFile = join(repo, 'packages/core/src/errors/catalog.ts');
    const sources = productionSources(repo)
      .filter((p) => p !== catalogFile)
      .map((p) => readFileSync(p, 'utf8'));
    expect(sources.length).toBeGreaterThan(20);
    const unused = Object.keys(errorCatalog).filter((code) => {
      const quoted = new RegExp(`['"\`]${code}['"\`]`);
      return !sources.some((s) => quoted.test(s));
    });
    expect(unused, 'use each code where it belongs, or remove it from the catalog').toEqual([]);
  });

  it('uses snake_case codes and HTTP error statuses', () => {
    for (const [code, e] of Object.entries(errorCatalog)) {
      expect(code).toMatch(/^[a-z]+(_[a-z0-9]+)+$/);
      expect(e.status).toBeGreaterThanOrEqual(400);
      expect(e.status).toBeLessThan(600);
    }
  });
});
