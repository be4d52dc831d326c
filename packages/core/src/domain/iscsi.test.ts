import { describe, expect, it } from 'vitest';
import { IQN_MAX_LENGTH, isBaseIqn, isChapSecret, isChapUser, isIqn, newChapSecret } from './iscsi';

const BASE = 'iqn.2026-07.com.controller';

describe('IQN grammar', () => {
  it('accepts a base and a base with a lower-case suffix, colons included', () => {
    for (const s of [BASE, `${BASE}:w1.ubuntu`, `${BASE}:w1.windows.iso`, `${BASE}:w1:x`, 'iqn.2003-01.org.linux-iscsi.host:sn.1:a']) expect(isIqn(s), s).toBe(true);
  });

  it('refuses bad months, upper case, empty or edge-punctuated suffixes, empty labels, other name types and injected lines', () => {
    for (const s of [
      'iqn.2026-13.com.controller:w1',
      'iqn.2026-00.com.controller',
      'IQN.2026-07.com.controller:x',
      `${BASE}:W1`,
      `${BASE}:w1\nchain http://evil/pwn.ipxe`,
      `${BASE}:x;rm -rf /`,
      `${BASE}:x y`,
      `${BASE}:`,
      `${BASE}:-w1`,
      `${BASE}:w1.`,
      'iqn.2026-07.com..controller:w1',
      'iqn.26-07.com.controller:x',
      'eui.02004567A425678D',
      ` ${BASE}:w1`,
      42,
      null,
    ]) {
      expect(isIqn(s), String(s)).toBe(false);
    }
  });

  it('holds a name to 223 bytes (RFC 3720)', () => {
    const exact = `${BASE}:${'a'.repeat(IQN_MAX_LENGTH - BASE.length - 1)}`;
    expect(exact.length).toBe(223);
    expect(isIqn(exact)).toBe(true);
    expect(isIqn(`${exact}a`)).toBe(false);
    expect(isIqn(`${BASE}:${'a'.repeat(200)}`)).toBe(false);
  });

  it('takes a base only without a suffix', () => {
    expect(isBaseIqn(BASE)).toBe(true);
    expect(isBaseIqn(`${BASE}:w1`)).toBe(false);
    expect(isBaseIqn('iqn.2026-13.com.controller')).toBe(false);
    expect(isBaseIqn(undefined)).toBe(false);
  });
});

describe('CHAP grammar', () => {
  it('makes 16-character letter-and-digit secrets that differ each time', () => {
    const a = newChapSecret();
    const b = newChapSecret();
    expect(a).toMatch(/^[A-Za-z0-9]{16}$/);
    expect(isChapSecret(a)).toBe(true);
    expect(a).not.toBe(b);
  });

  it('refuses secrets outside 12–16 letters and digits, and users with syntax characters', () => {
    for (const s of ['short1234ab', 'a'.repeat(17), 'abcdefghijk ', 'abcdefghijk$', 'abcdefghijk\n', 'abc=defghijkl', '', 42]) expect(isChapSecret(s), String(s)).toBe(false);
    expect(isChapSecret('abcdefABCD12')).toBe(true);
    for (const u of ['il-w1', 'il-worker-01.a_b', 'iqn.2026-07.com.x:w1']) expect(isChapUser(u), u).toBe(true);
    for (const u of ['', 'IL-w1', 'il w1', 'il-w1\nset x', 'il=w1', 'il-w1-', 'x'.repeat(129), null]) expect(isChapUser(u), String(u)).toBe(false);
  });
});
