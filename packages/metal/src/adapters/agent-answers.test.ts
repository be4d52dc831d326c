import { describe, expect, it } from 'vitest';
import { parseCapabilities, parseCreatedLun, parseMasters, parseScan, parseTargets } from './agent-answers';

const IQN = 'iqn.2026-07.com.controller:w1.ubuntu';
const refused = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('accepted');
};

describe('agent answers', () => {
  it('keeps only the checked fields of /capabilities, and refuses a bad backend or base_iqn', () => {
    expect(parseCapabilities('a', { backend: 'lio', base_iqn: 'iqn.2026-07.com.controller', cd: true, fs_type: 'xfs', extra: 'x' })).toEqual({
      backend: 'lio',
      base_iqn: 'iqn.2026-07.com.controller',
      cd: true,
      fs_type: 'xfs',
    });
    expect(refused(() => parseCapabilities('a', { backend: 'iet' }))).toMatchObject({ code: 'agent_bad_gateway', status: 502 });
    expect(refused(() => parseCapabilities('a', { base_iqn: 'iqn.2026-07.com.controller:suffix' }))).toMatchObject({ code: 'agent_bad_gateway' });
    expect(refused(() => parseCapabilities('a', { fs_type: 'xfs\nshell' }))).toMatchObject({ code: 'agent_bad_gateway' });
    expect(refused(() => parseCapabilities('a', ['not', 'an', 'object']))).toMatchObject({ code: 'agent_bad_gateway' });
  });

  it('takes a created LUN only under the IQN asked for, with a backing that is its file', () => {
    const ok = { iqn: IQN, backing: '/home/iscsi_img/w1.ubuntu.img', filename: 'w1.ubuntu.img', clone: 'reflink', size: 1024 };
    expect(parseCreatedLun('a', ok, IQN)).toEqual(ok);
    expect(parseCreatedLun('a', { ...ok, iqn: `${IQN}-x` }, undefined).iqn).toBe(`${IQN}-x`);
    // Asked for IQN, answered another (valid) one: refused, whatever else is right.
    expect(refused(() => parseCreatedLun('a', { ...ok, iqn: `${IQN}-x` }, IQN))).toMatchObject({ code: 'agent_bad_gateway' });
    // A backing that is not the path of its file: refused.
    expect(refused(() => parseCreatedLun('a', { ...ok, backing: '/home/iscsi_img/w2.ubuntu.img' }, IQN))).toMatchObject({ code: 'agent_bad_gateway' });
    expect(refused(() => parseCreatedLun('a', { ...ok, clone: 'magic' }, IQN))).toMatchObject({ code: 'agent_bad_gateway' });
    expect(refused(() => parseCreatedLun('a', { ...ok, initiator: 'root' }, IQN))).toMatchObject({ code: 'agent_bad_gateway' });
  });

  it('refuses a /luns listing with a target outside the IQN grammar or a backing with a control character', () => {
    expect(parseTargets('a', [{ iqn: IQN, tid: 1, luns: [{ backing: '/d/w1.img' }], acl: ['ALL'] }])).toEqual([{ iqn: IQN, tid: 1, luns: [{ backing: '/d/w1.img' }], acl: ['ALL'] }]);
    expect(refused(() => parseTargets('a', [{ iqn: `${IQN}\nshell` }]))).toMatchObject({ code: 'agent_bad_gateway' });
    expect(refused(() => parseTargets('a', [{ iqn: IQN, luns: [{ backing: '/d/x\n.img' }] }]))).toMatchObject({ code: 'agent_bad_gateway' });
    expect(refused(() => parseTargets('a', { targets: [] }))).toMatchObject({ code: 'agent_bad_gateway' });
    // issue 24: the sessions (who logged in, since when) pass a grammar too.
    const session = { initiator: 'iqn.2010-04.org.ipxe:52-54-00-12-34-56', address: '127.0.0.1', first_seen_at: '2026-12-01T19:24:06.123Z', ended_at: null };
    expect(parseTargets('a', [{ iqn: IQN, luns: [], sessions: [session] }])[0].sessions).toEqual([session]);
    for (const bad of [
      { ...session, initiator: 'x\nshell' },
      { ...session, address: 'not an address' },
      { ...session, first_seen_at: 'yesterday' },
      { ...session, ended_at: 12 },
    ]) {
      expect(refused(() => parseTargets('a', [{ iqn: IQN, luns: [], sessions: [bad] }]))).toMatchObject({ code: 'agent_bad_gateway' });
    }
    expect(refused(() => parseTargets('a', [{ iqn: IQN, luns: [], sessions: 'many' }]))).toMatchObject({ code: 'agent_bad_gateway' });
  });

  it('reads masters as an object or a bare list, and scan results with checked IQNs', () => {
    expect(parseMasters('a', { masters: [{ name: '_tpl_u.img', size: 1, mtime: 2 }] })).toEqual([{ name: '_tpl_u.img', size: 1, mtime: 2 }]);
    expect(parseMasters('a', ['_tpl_u.img'])).toEqual([{ name: '_tpl_u.img' }]);
    expect(refused(() => parseMasters('a', { masters: [{ name: 'a/b.img' }] }))).toMatchObject({ code: 'agent_bad_gateway' });
    expect(parseScan('a', { created: [{ iqn: IQN, filename: 'w1.ubuntu.img' }], skipped: [{ iqn: 'bad iqn', filename: 'evil-link.img', reason: 'outside DISK_DIR' }] })).toEqual({
      created: [{ iqn: IQN, filename: 'w1.ubuntu.img' }],
      skipped: [{ iqn: null, filename: 'evil-link.img', reason: 'outside DISK_DIR' }],
    });
    expect(refused(() => parseScan('a', { created: [{ iqn: 'x', filename: 'w1.img' }] }))).toMatchObject({ code: 'agent_bad_gateway' });
  });
});
