import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AppError } from '../errors';
import { createFileExclusive, createFileExclusiveSync, replaceFileSync, resolveInside, temporaryNameFor, writeFileAtomic } from './files';

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

describe('files ironlens creates for itself (review 1, M1)', () => {
  /** Another user's plants at `name`: a file of theirs (0666), and a symlink to a file elsewhere. */
  const plants = (name: string) => {
    const victim = join(root, 'victim');
    writeFileSync(victim, 'theirs');
    return [
      () => writeFileSync(name, 'planted', { mode: 0o666 }),
      () => symlinkSync(victim, name),
    ].map((plant) => ({ plant, victim }));
  };

  it('creates a new file 0600 by default, and never writes through a file or symlink already at its name', async () => {
    createFileExclusiveSync(join(root, 'new'), 'secret');
    expect(readFileSync(join(root, 'new'), 'utf8')).toBe('secret');
    expect(statSync(join(root, 'new')).mode & 0o777).toBe(0o600);
    await createFileExclusive(join(root, 'new-async'), 'secret');
    expect(statSync(join(root, 'new-async')).mode & 0o777).toBe(0o600);
    for (const create of [createFileExclusiveSync, createFileExclusive]) {
      for (const { plant, victim } of plants(join(root, 'planted'))) {
        plant();
        await expect(async () => create(join(root, 'planted'), 'secret')).rejects.toMatchObject({ code: 'EEXIST' });
        expect(readFileSync(victim, 'utf8')).toBe('theirs');
        rmSync(join(root, 'planted'));
      }
    }
  });

  it('replaces a file through a temporary of a random name beside it; one planted at that name is refused and left alone, the file too', async () => {
    const file = join(root, 'login.json');
    writeFileSync(file, 'old');
    replaceFileSync(file, 'new');
    expect(readFileSync(file, 'utf8')).toBe('new');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    await writeFileAtomic(join(root, 'deeper', 'hosts.conf'), 'hosts');
    expect(statSync(join(root, 'deeper', 'hosts.conf')).mode & 0o777).toBe(0o644);
    // Nothing is left beside them.
    expect(readdirSync(root).filter((n) => n.endsWith('.tmp'))).toEqual([]);
    expect(temporaryNameFor(file)).toMatch(/\/\.login\.json\.[0-9a-f]{12}\.tmp$/);
    expect(temporaryNameFor(file)).not.toBe(temporaryNameFor(file));
    const temp = join(root, '.login.json.planted.tmp');
    const replace = [(t: string) => replaceFileSync(file, 'secret', 0o600, t), (t: string) => writeFileAtomic(file, 'secret', 0o600, t)];
    for (const write of replace) {
      for (const { plant, victim } of plants(temp)) {
        plant();
        await expect(async () => write(temp)).rejects.toMatchObject({ code: 'EEXIST' });
        expect(readFileSync(victim, 'utf8')).toBe('theirs');
        expect(readFileSync(file, 'utf8')).toBe('new');
        expect(lstatSync(temp).isFile() || lstatSync(temp).isSymbolicLink()).toBe(true);
        rmSync(temp);
      }
    }
  });
});

