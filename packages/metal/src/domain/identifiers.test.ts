import { describe, expect, it } from 'vitest';
import { metalConfigFromEnv } from '../config';
import { isBackingPathOf, isFileName } from './identifiers';

describe('metal identifiers', () => {
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
