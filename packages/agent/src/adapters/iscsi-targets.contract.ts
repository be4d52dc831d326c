import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppError } from '@ironlens/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IscsiTargets } from './iscsi-targets';

const BASE = 'iqn.2026-07.com.contract';

async function codeOf(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
  } catch (err) {
    return err instanceof AppError ? err.code : String(err);
  }
  return undefined;
}

/**
 * One behaviour for every `IscsiTargets`: run against tgtd for real and against the
 * targetcli stand-in, so neither can drift from what the service relies on.
 * `make` returns a backend with no targets.
 */
export function describeIscsiTargetsContract(name: string, make: () => Promise<{ targets: IscsiTargets; close(): Promise<void> }>): void {
  describe(`IscsiTargets contract: ${name}`, () => {
    let targets: IscsiTargets;
    let close: () => Promise<void>;
    let dir: string;
    const file = (n: string) => {
      const p = join(dir, n);
      writeFileSync(p, Buffer.alloc(1024 * 1024));
      return p;
    };

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'ironlens-contract-'));
      ({ targets, close } = await make());
    });
    afterAll(async () => {
      await close?.();
      rmSync(dir, { recursive: true, force: true });
    });

    it('lists a new disk target with its backing file', async () => {
      const backing = file('a.img');
      await targets.createDisk(`${BASE}:a`, backing);
      const t = (await targets.list()).find((x) => x.iqn === `${BASE}:a`);
      expect(t?.luns).toEqual([expect.objectContaining({ backing, cd: false })]);
    });

    it('lists a target made without an initiator as open to ALL', async () => {
      const t = (await targets.list()).find((x) => x.iqn === `${BASE}:a`);
      expect(t?.acl).toEqual(['ALL']);
    });

    it('lists a disk and a CD made for one initiator with only that initiator in the ACL', async () => {
      const initiator = `${BASE}:host-r`;
      const disk = file('r.img');
      await targets.createDisk(`${BASE}:r`, disk, { initiator });
      const iso = file('r.iso');
      await targets.createCd(`${BASE}:r.iso`, iso, { initiator });
      const listed = await targets.list();
      expect(listed.find((x) => x.iqn === `${BASE}:r`)).toMatchObject({ luns: [expect.objectContaining({ backing: disk, cd: false })], acl: [initiator] });
      expect(listed.find((x) => x.iqn === `${BASE}:r.iso`)).toMatchObject({ luns: [expect.objectContaining({ backing: iso, cd: true })], acl: [initiator] });
    });

    it('lists a CD target as a cd LUN', async () => {
      const backing = file('b.iso');
      await targets.createCd(`${BASE}:b.iso`, backing);
      const t = (await targets.list()).find((x) => x.iqn === `${BASE}:b.iso`);
      expect(t?.luns).toEqual([expect.objectContaining({ backing, cd: true })]);
    });

    it('refuses a second target with the same IQN as iqn_exists', async () => {
      expect(await codeOf(targets.createDisk(`${BASE}:a`, file('a2.img')))).toBe('iqn_exists');
    });

    it('deletes a target and answers iqn_not_found for an unknown one', async () => {
      await targets.delete(`${BASE}:a`);
      expect((await targets.list()).map((t) => t.iqn)).not.toContain(`${BASE}:a`);
      expect(await codeOf(targets.delete(`${BASE}:a`))).toBe('iqn_not_found');
    });

    it('creates concurrent targets without losing any', async () => {
      const names = Array.from({ length: 6 }, (_, i) => `${BASE}:c${i}`);
      await Promise.all(names.map((n, i) => targets.createDisk(n, file(`c${i}.img`))));
      const listed = await targets.list();
      for (const n of names) expect(listed.map((t) => t.iqn)).toContain(n);
      if (targets.backend === 'stgt') expect(new Set(listed.map((t) => t.tid)).size).toBe(listed.length);
    });

    it('leaves no target behind when the backing file cannot be opened', async () => {
      const code = await codeOf(targets.createDisk(`${BASE}:missing`, join(dir, 'does-not-exist.img')));
      expect(code).toBe('backend_failed');
      expect((await targets.list()).map((t) => t.iqn)).not.toContain(`${BASE}:missing`);
    });
  });
}
