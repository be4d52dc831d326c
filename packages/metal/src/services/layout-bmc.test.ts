import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SecretBox } from '@ironlens/core';
import { afterEach, describe, expect, it } from 'vitest';
import { type MetalFixture, newMetalFixture } from '../testing/fixture';

/** Devices' BMCs through `ironlens export` / `import` (issue 21). */
describe('BMCs in the file layout', () => {
  const open: MetalFixture[] = [];
  const dirs: string[] = [];
  afterEach(async () => {
    for (const f of open.splice(0)) await f.close();
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  const fixture = async (secrets: SecretBox) => {
    const f = await newMetalFixture({}, { secrets });
    open.push(f);
    return f;
  };
  const tmp = () => {
    const d = mkdtempSync(join(tmpdir(), 'ironlens-layout-bmc-'));
    dirs.push(d);
    return d;
  };
  const mac = '52:54:00:21:10:01';
  const bmc = { driver: 'redfish', url: 'https://bmc-01.example/redfish/v1/Systems/1', username: 'root', password: 'calvin-21-secret', verify_tls: false };

  it('carries a BMC without its password by default, and sealed with --bmc-passwords into a store with the same key', async () => {
    const key = SecretBox.fromKey(randomBytes(32));
    const src = await fixture(key);
    await src.services.devices.register({ mac, bmc } as never, {});
    const plainDir = tmp();
    await src.services.layout.export(plainDir);
    const plain = readFileSync(join(plainDir, 'state/devices.yml'), 'utf8');
    expect(plain).toContain('url: https://bmc-01.example/redfish/v1/Systems/1');
    expect(plain).not.toContain('password');
    const sealedDir = tmp();
    await src.services.layout.export(sealedDir, { bmcPasswords: true });
    expect(readFileSync(join(sealedDir, 'state/devices.yml'), 'utf8')).not.toContain(bmc.password);

    const same = await fixture(key);
    await same.services.layout.import(sealedDir);
    expect(await same.services.power.getBmc(mac)).toMatchObject({ driver: 'redfish', url: bmc.url, verify_tls: false, username: 'root', password_set: true });

    const without = await fixture(key);
    await without.services.layout.import(plainDir);
    expect(await without.services.power.getBmc(mac)).toMatchObject({ password_set: false });
    await expect(without.services.power.act(mac, { action: 'on' }, {})).rejects.toMatchObject({ code: 'bmc_not_configured' });

    // Another key cannot open the sealed passwords: the import refuses and writes nothing.
    const other = await fixture(SecretBox.fromKey(randomBytes(32)));
    await expect(other.services.layout.import(sealedDir)).rejects.toMatchObject({ code: 'import_invalid' });
    expect(await other.services.devices.list()).toEqual([]);
  });

  it('refuses a BMC outside the grammar before anything is written', async () => {
    const f = await fixture(SecretBox.fromKey(randomBytes(32)));
    const d = tmp();
    const state = join(d, 'state');
    mkdirSync(state);
    writeFileSync(join(state, 'devices.yml'), `devices:\n  "${mac}":\n    bmc:\n      driver: ipmi\n      host: "-oProxyCommand=x"\n      username: admin\n`);
    await expect(f.services.layout.import(d)).rejects.toMatchObject({ code: 'import_invalid' });
    expect(await f.services.devices.list()).toEqual([]);
  });

  it('refuses a BMC at a link-local or metadata address (ironlens import) before anything is written', async () => {
    const f = await fixture(SecretBox.fromKey(randomBytes(32)));
    for (const where of ['host: "169.254.169.254"', 'host: metadata.google.internal']) {
      const d = tmp();
      mkdirSync(join(d, 'state'));
      writeFileSync(join(d, 'state', 'devices.yml'), `devices:\n  "${mac}":\n    bmc:\n      driver: ipmi\n      ${where}\n      username: admin\n`);
      const err = await f.services.layout.import(d).catch((e: unknown) => e);
      expect(err, where).toMatchObject({ code: 'import_invalid' });
      expect((err as Error).message).toContain('IRONLENS_BMC_ALLOW_LINK_LOCAL');
    }
    expect(await f.services.devices.list()).toEqual([]);
  });
});
