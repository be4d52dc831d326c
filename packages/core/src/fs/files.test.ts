import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AppError } from '../errors';
import { resolveInside } from './files';

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'ironlens-files-'));
  mkdirSync(join(root, 'sub'));
  writeFileSync(join(root, 'a.img'), 'x');
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

function refusal(name: string): AppError {
  try {
    resolveInside(root, name);
  } catch (err) {
    if (err instanceof AppError) return err;
    throw new Error(`resolveInside(${JSON.stringify(name)}) threw a raw error: ${(err as Error).message}`);
  }
  throw new Error(`resolveInside(${JSON.stringify(name)}) accepted the name`);
}

describe('resolveInside', () => {
  it('resolves existing files and new files in existing directories', () => {
    expect(resolveInside(root, 'a.img')).toMatch(/a\.img$/);
    expect(resolveInside(root, 'sub/new.img')).toMatch(/sub\/new\.img$/);
  });

  it('answers 404 path_not_found, with the name, when a directory of the name is missing', () => {
    for (const name of ['nodir/x', 'nodir/deeper/x.img', 'a.img/x']) {
      const e = refusal(name);
      expect(e.status, name).toBe(404);
      expect(e.code).toBe('path_not_found');
      expect(e.message).toContain(name);
    }
  });

  it('refuses names that leave the root, symlinks and loops included', () => {
    symlinkSync('/etc', join(root, 'out'));
    symlinkSync('loop', join(root, 'loop'));
    for (const name of ['../x', '/etc/passwd', 'out/passwd', 'out/newfile', 'a\0b']) {
      expect(refusal(name).code, name).toBe('path_outside_root');
    }
    for (const name of ['loop', 'loop/x', 'y'.repeat(5000)]) {
      const e = refusal(name);
      expect([e.code, e.status], name.slice(0, 20)).toEqual(['path_invalid', 400]);
    }
  });
});
