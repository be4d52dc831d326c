// Renders docs/access.md from the routes of `ironlens serve` and the permission table:
// `node --import tsx scripts/gen-access-doc.ts` (it starts serve on loopback in a temp dir).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { renderAccessDoc } from '../packages/cli/src/access-doc';
import { serve } from '../packages/cli/src/serve';

const dir = mkdtempSync(join(tmpdir(), `ironlens-access-doc-${process.pid}-`));
const running = await serve({ IRONLENS_DATA_DIR: dir, IRONLENS_BOOT_LISTEN: '127.0.0.1:0', IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0', IPXE_CP_DNSMASQ_RELOAD: 'false', KIND_K8S_SKIP_VERSION_LIST: '1' }, () => {});
try {
  writeFileSync(new URL('../docs/access.md', import.meta.url), renderAccessDoc(running.apps));
} finally {
  await running.close();
  rmSync(dir, { recursive: true, force: true });
}
