import { isAppError } from '@ironlens/core';
import { describe, expect, it } from 'vitest';
import {
  checkDiskFileName,
  checkIqn,
  defaultDiskFileName,
  derivedCdIqn,
  derivedDiskIqn,
  isBaseIqn,
  isIqn,
  parseSize,
} from './names';

const BASE = 'iqn.2026-07.com.controller';

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    return isAppError(err) ? err.code : 'not-an-app-error';
  }
  return undefined;
}

describe('IQN rules', () => {
  it('accepts lowercase iqn.YYYY-MM.domain[:suffix] names', () => {
    expect(isIqn('iqn.2026-07.com.controller')).toBe(true);
    expect(isIqn('iqn.2026-07.com.controller:worker-01.ubuntu')).toBe(true);
    expect(isIqn('iqn.2003-01.org.linux-iscsi.host:sn.1:a')).toBe(true);
  });

  it('refuses uppercase, bad dates, shell characters and over-long names', () => {
    for (const bad of [
      'IQN.2026-07.com.controller:x',
      'iqn.2026-07.com.controller:Worker',
      'iqn.2026-13.com.controller:x',
      'iqn.26-07.com.controller:x',
      'iqn.2026-07.com.controller:x;rm -rf /',
      'iqn.2026-07.com.controller:x y',
      'iqn.2026-07.com.controller:',
      'iqn.2026-07.com.controller:-x',
      'eui.02004567a425678d',
      `iqn.2026-07.com.controller:${'a'.repeat(220)}`,
      42,
    ]) {
      expect(isIqn(bad), String(bad)).toBe(false);
    }
  });

  it('answers 400 iqn_invalid for syntax and 400 iqn_base_mismatch for another base', () => {
    expect(checkIqn(`${BASE}:worker-01.ubuntu`, BASE)).toBe('worker-01.ubuntu');
    expect(codeOf(() => checkIqn('nope', BASE))).toBe('iqn_invalid');
    expect(codeOf(() => checkIqn('iqn.2026-07.com.other:worker-01', BASE))).toBe('iqn_base_mismatch');
    expect(codeOf(() => checkIqn(BASE, BASE))).toBe('iqn_base_mismatch');
    expect(codeOf(() => checkIqn(`${BASE}x:y`, BASE))).toBe('iqn_base_mismatch');
  });

  it('checks a base IQN has no suffix', () => {
    expect(isBaseIqn(BASE)).toBe(true);
    expect(isBaseIqn(`${BASE}:x`)).toBe(false);
  });
});

describe('file names', () => {
  it('derives the default disk file from the IQN suffix and back', () => {
    expect(defaultDiskFileName('worker-01.ubuntu')).toBe('worker-01.ubuntu.img');
    expect(derivedDiskIqn(BASE, 'worker-01.ubuntu.img')).toBe(`${BASE}:worker-01.ubuntu`);
  });

  it('derives a CD IQN from the ISO name, lowercased with invalid characters replaced', () => {
    expect(derivedCdIqn(BASE, 'Win11_24H2.iso')).toBe(`${BASE}:win11-24h2.iso`);
    expect(derivedCdIqn(BASE, 'ubuntu 24.04 (live).iso')).toBe(`${BASE}:ubuntu-24.04-live.iso`);
    expect(derivedCdIqn(BASE, '__A..B__.ISO')).toBe(`${BASE}:a.b.iso`);
  });

  it('refuses disk file names that are paths, hidden, masters or not .img', () => {
    expect(checkDiskFileName('worker-01.ubuntu.img')).toBe('worker-01.ubuntu.img');
    for (const bad of ['../x.img', '/etc/x.img', '.hidden.img', 'a/b.img', '_tpl_x.img', 'x.qcow2', 'x y.img', '', 7]) {
      expect(codeOf(() => checkDiskFileName(bad)), String(bad)).toBe('filename_invalid');
    }
  });
});

describe('sizes', () => {
  it('reads bytes and binary K, M, G, T units', () => {
    expect(parseSize('40G')).toBe(40 * 1024 ** 3);
    expect(parseSize('512M')).toBe(512 * 1024 ** 2);
    expect(parseSize('1T')).toBe(1024 ** 4);
    expect(parseSize('2048K')).toBe(2048 * 1024);
    expect(parseSize('1048576')).toBe(1048576);
    expect(parseSize(1048576)).toBe(1048576);
    expect(parseSize('10GiB')).toBe(10 * 1024 ** 3);
    expect(parseSize('8g')).toBe(8 * 1024 ** 3);
  });

  it('answers 400 size_invalid outside 1M..64T, for odd byte counts and for garbage', () => {
    for (const bad of ['100K', '0', '65T', '1P', '40GB', 'iB', '-1G', '1.5G', '1G; rm', '1048577', 1.5, null, {}]) {
      expect(codeOf(() => parseSize(bad)), String(bad)).toBe('size_invalid');
    }
  });
});
