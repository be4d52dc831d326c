import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A stand-in for the Vite build output, with the same relative URLs Vite writes. */
export function fakeDist(dir: string): string {
  const dist = join(dir, 'dist');
  mkdirSync(join(dist, 'js'), { recursive: true });
  mkdirSync(join(dist, 'assets'), { recursive: true });
  writeFileSync(
    join(dist, 'kind.html'),
    '<!doctype html><html><head><script type="module" crossorigin src="./js/kind.js"></script><link rel="stylesheet" crossorigin href="./assets/kind-abc.css"></head>' +
      '<body data-api-base="/api/v1" data-docs-url="/docs" data-redoc-url="/redoc"><div id="root"></div></body></html>',
  );
  writeFileSync(join(dist, 'js', 'kind.js'), 'console.log("kind")');
  writeFileSync(join(dist, 'assets', 'kind-abc.css'), 'body{}');
  return dist;
}
