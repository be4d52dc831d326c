import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { errorCatalog } from './catalog';

describe('error catalog', () => {
  it('documents every code in docs/errors.md', () => {
    const doc = readFileSync(new URL('../../../../docs/errors.md', import.meta.url), 'utf8');
    const missing = Object.keys(errorCatalog).filter((code) => !doc.includes(`\`${code}\``));
    expect(missing, 'run: node --import tsx scripts/gen-errors-doc.ts').toEqual([]);
  });

  it('uses snake_case codes and HTTP error statuses', () => {
    for (const [code, e] of Object.entries(errorCatalog)) {
      expect(code).toMatch(/^[a-z]+(_[a-z0-9]+)+$/);
      expect(e.status).toBeGreaterThanOrEqual(400);
      expect(e.status).toBeLessThan(600);
    }
  });
});
