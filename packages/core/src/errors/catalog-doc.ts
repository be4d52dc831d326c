import { errorCatalog } from './catalog';

type Catalog = Record<string, { status: number; message: string }>;

/**
 * docs/errors.md as the catalog renders it. `scripts/gen-errors-doc.ts` writes it; the
 * catalog test compares the file with it byte for byte.
 */
export function renderErrorCatalogDoc(catalog: Catalog = errorCatalog): string {
  const rows = Object.entries(catalog).map(([code, e]) => `| \`${code}\` | ${e.status} | ${e.message} |`);
  return `# Error catalog

Every failure a client can cause has a stable code (\`<noun>_<condition>\`, never renamed
once shipped) and a status. Each API renders it in its own seed's shape: seeds 004 and 001
as FastAPI's \`{"detail": "..."}\` (schema errors: 422 with a list), errors passed through
from a storage agent as \`{"agent": "...", "error": "..."}\`. The message below is the
default; most errors carry a more precise one. Generated from
\`packages/core/src/errors/catalog.ts\` by \`node --import tsx scripts/gen-errors-doc.ts\`; a
test fails when this file differs from what that command writes, and when a code is used
nowhere in \`packages/*/src\`.

| code | status | default message |
| --- | --- | --- |
${rows.join('\n')}
`;
}
