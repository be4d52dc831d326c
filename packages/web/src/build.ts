import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const webRoot = join(dirname(fileURLToPath(import.meta.url)), '..');

function viteBin(): string {
  // The workspace hoists vite to the root node_modules.
  for (let dir = webRoot; ; dir = dirname(dir)) {
    const bin = join(dir, 'node_modules', 'vite', 'bin', 'vite.js');
    if (existsSync(bin)) return bin;
    if (dirname(dir) === dir) throw new Error('vite is not installed (npm install at the repository root)');
  }
}

/**
 * Builds the console's assets with Vite into `outDir` (default: the package's `dist`).
 * Tests build into a temporary directory so that parallel runs never share files.
 */
export function buildWebAssets(outDir?: string): Promise<string> {
  const args = [viteBin(), 'build', '--logLevel', 'warn'];
  if (outDir) args.push('--outDir', outDir, '--emptyOutDir');
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { cwd: webRoot, timeout: 180_000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`vite build failed: ${stderr || stdout || err.message}`));
      resolve(outDir ?? join(webRoot, 'dist'));
    });
  });
}
