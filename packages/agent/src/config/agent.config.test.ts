import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readAgentConfig } from './agent.config';

const dir = mkdtempSync(join(tmpdir(), 'ironlens-agent-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('readAgentConfig', () => {
  it('applies the documented defaults', () => {
    const c = readAgentConfig({ DISK_DIR: dir });
    expect(c).toEqual({
      token: undefined,
      diskDir: dir,
      backend: 'stgt',
      baseIqn: 'iqn.2026-07.com.controller',
      cd: true,
      tgtControlPort: 0,
      listen: { host: '0.0.0.0', port: 4840 },
      masterRescanSeconds: 30,
      scanOpen: false,
    });
  });

  it('turns the cd role off by default for lio, and lets either be set', () => {
    expect(readAgentConfig({ DISK_DIR: dir, IPXE_AGENT_BACKEND: 'lio' }).cd).toBe(false);
    expect(readAgentConfig({ DISK_DIR: dir, IPXE_AGENT_BACKEND: 'lio', IPXE_AGENT_CD: 'true' }).cd).toBe(true);
    expect(readAgentConfig({ DISK_DIR: dir, IPXE_AGENT_CD: 'off' }).cd).toBe(false);
  });

  it('reads every variable', () => {
    const c = readAgentConfig({
      DISK_DIR: dir,
      IPXE_AGENT_TOKEN: 't',
      IPXE_AGENT_BACKEND: 'LIO',
      IPXE_AGENT_BASE_IQN: 'iqn.2030-01.org.example',
      IPXE_AGENT_TGT_CONTROL_PORT: '4242',
      IRONLENS_AGENT_LISTEN: '127.0.0.1:9999',
      IRONLENS_AGENT_MASTER_RESCAN_SECONDS: '5',
    });
    expect(c).toMatchObject({ token: 't', backend: 'lio', baseIqn: 'iqn.2030-01.org.example', tgtControlPort: 4242, listen: { host: '127.0.0.1', port: 9999 }, masterRescanSeconds: 5 });
  });

  it('fails with a message naming the variable for each invalid value', () => {
    writeFileSync(join(dir, 'a-file'), '');
    const cases: [Record<string, string>, RegExp][] = [
      [{ IPXE_AGENT_BACKEND: 'iet' }, /IPXE_AGENT_BACKEND/],
      [{ IPXE_AGENT_BASE_IQN: 'iqn.2026-07.com.controller:x' }, /IPXE_AGENT_BASE_IQN/],
      [{ IPXE_AGENT_BASE_IQN: 'IQN.2026-07.COM' }, /IPXE_AGENT_BASE_IQN/],
      [{ IPXE_AGENT_CD: 'maybe' }, /IPXE_AGENT_CD/],
      [{ IPXE_AGENT_TGT_CONTROL_PORT: '40000' }, /IPXE_AGENT_TGT_CONTROL_PORT/],
      [{ IPXE_AGENT_TGT_CONTROL_PORT: 'x' }, /IPXE_AGENT_TGT_CONTROL_PORT/],
      [{ IRONLENS_AGENT_LISTEN: 'somewhere' }, /IRONLENS_AGENT_LISTEN/],
      [{ IRONLENS_AGENT_LISTEN: 'off' }, /IRONLENS_AGENT_LISTEN/],
      [{ DISK_DIR: join(dir, 'missing') }, /DISK_DIR/],
      [{ DISK_DIR: join(dir, 'a-file') }, /DISK_DIR/],
      [{ DISK_DIR: 'relative/dir' }, /DISK_DIR/],
    ];
    for (const [env, message] of cases) {
      expect(() => readAgentConfig({ DISK_DIR: dir, ...env }), JSON.stringify(env)).toThrow(message);
    }
  });
});
