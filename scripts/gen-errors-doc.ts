// Renders docs/errors.md from the error catalog: `node --import tsx scripts/gen-errors-doc.ts`.
import { writeFileSync } from 'node:fs';
import { errorCatalog } from '../packages/core/src/errors/catalog';

const rows = Object.entries(errorCatalog).map(([code, e]) => `| \`${code}\` | ${e.status} | ${e.message} |`);
writeFileSync(
  new URL('../docs/errors.md', import.meta.url),
  `# Error catalog

Every failure a client can cause has a stable code (\`<noun>_<condition>\`, never renamed
once shipped) and a status. Each API renders it in its own seed's shape: seeds 004 and 001
as FastAPI's \`{"detail": "..."}\` (schema errors: 422 with a list), errors passed through
from a storage agent as \`{"agent": "...", "error": "..."}\`. The message below is the
default; most errors carry a more precise one. Generated from
\`packages/core/src/errors/catalog.ts\` by \`node --import tsx scripts/gen-errors-doc.ts\`; a
test fails when a code is missing here.

| code | status | default message |
| --- | --- | --- |
${rows.join('\n')}
`,
);
