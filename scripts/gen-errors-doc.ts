// Renders docs/errors.md from the error catalog: `node --import tsx scripts/gen-errors-doc.ts`.
import { writeFileSync } from 'node:fs';
import { renderErrorCatalogDoc } from '../packages/core/src/errors/catalog-doc';

writeFileSync(new URL('../docs/errors.md', import.meta.url), renderErrorCatalogDoc());
