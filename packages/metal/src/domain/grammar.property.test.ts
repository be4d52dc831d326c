/**
 * Property-based tests (fast-check): random strings, and near-valid values with injected
 * newlines, commas, tags and spaces, through every identifier grammar and both renderers.
 * The expectations are literal patterns written here, not the code under test: no output
 * line is ever outside its grammar.
 */
import { AppError } from '@ironlens/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { renderDhcpHosts } from '../adapters/dnsmasq.adapter';
import { type BootVars, renderBootVarsScript } from '../services/boot-vars.service';
import {
  isIqn,
  isIscsiServer,
  isIscsiSep,
  isMenuItem,
  isMenuTimeout,
  isValidArch,
  isValidHostname,
  isValidMac,
  normalizeMac,
  requireHostname,
  requireMac,
  requireMenuItem,
  requireMenuTimeout,
  requireOs,
  requireWorkerId,
} from './identifiers';

const RUNS = { numRuns: 2_000 };
const MAC_LINE = /^[0-9a-f][02468ace](:[0-9a-f]{2}){5}$/;
const ID_LINE = /^[a-z0-9][a-z0-9._-]{0,62}$/;

/** Pieces an attacker would splice in: line breaks, dnsmasq separators and tags, iPXE syntax. */
const poison = fc.constantFrom('\n', '\r', '\r\n', ',', 'set:x', 'tag:', ' ', '\t', '\0', '#', '$' + '{x}', '\u2028', '\u0085', ';', '"', "'", '/');
/** Near-valid values: a valid one with poison spliced in somewhere. */
const spliced = (valid: fc.Arbitrary<string>) =>
  fc.tuple(valid, poison, fc.nat(), fc.string()).map(([v, p, at, tail]) => {
    const i = at % (v.length + 1);
    return v.slice(0, i) + p + v.slice(i) + tail;
  });
const validMac = fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 6, maxLength: 6 }).map((b) => b.map((x) => x.toString(16).padStart(2, '0')).join(':'));
const validId = fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,20}$/);
const validIqn = fc.tuple(validId, validId).map(([a, b]) => `iqn.2026-07.com.${a.replace(/[._]/g, 'x')}:${b.replace(/_/g, '-')}`);
const anyText = fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme' }), spliced(validMac), spliced(validId), spliced(validIqn), validMac, validId, validIqn);

/** Calls `f`; an AppError (a refusal) gives null, any other error fails the property. */
function accepted<T>(f: () => T): T | null {
  try {
    return f();
  } catch (err) {
    if (err instanceof AppError && err.status === 400) return null;
    throw err;
  }
}

describe('identifier grammars', () => {
  it('a MAC accepted anywhere is six lower-case hex pairs, unicast', () => {
    fc.assert(
      fc.property(anyText, (s) => {
        const n = normalizeMac(s);
        if (n !== null) expect(n).toMatch(MAC_LINE);
        const r = accepted(() => requireMac(s));
        expect(r).toBe(n);
        if (isValidMac(s)) expect(s).toMatch(MAC_LINE);
      }),
      RUNS,
    );
  });

  it('worker ids and hostnames accepted are one token of [a-z0-9._-], at most 63', () => {
    fc.assert(
      fc.property(anyText, (s) => {
        for (const f of [requireWorkerId, requireHostname]) {
          const r = accepted(() => f(s));
          if (r !== null) expect(r).toMatch(ID_LINE);
        }
        if (isValidHostname(s)) expect(s).toMatch(ID_LINE);
      }),
      RUNS,
    );
  });

  it('os, menu items, timeouts, arch, IQNs, portals and separators accepted hold no separator or line break', () => {
    fc.assert(
      fc.property(anyText, fc.oneof(fc.integer(), fc.double(), fc.constant(null), fc.string()), (s, n) => {
        const os = accepted(() => requireOs(s));
        if (os !== null) expect(['windows', 'ubuntu', 'debian', 'centos', 'esxi']).toContain(os);
        const item = accepted(() => requireMenuItem(s));
        if (item !== null) expect(item).toMatch(/^[a-z-]+$/);
        if (isMenuItem(s)) expect(s).toMatch(/^[a-z-]+$/);
        const t = accepted(() => requireMenuTimeout(n));
        if (t !== null) expect(String(t)).toMatch(/^\d{1,8}$/);
        if (isMenuTimeout(n)) expect(String(n)).toMatch(/^\d{1,8}$/);
        if (isValidArch(s)) expect(s).toMatch(/^[a-z0-9_-]{1,32}$/);
        if (isIqn(s)) expect(s).toMatch(/^iqn\.\d{4}-\d{2}\.[a-z0-9.:-]{1,220}$/);
        if (isIscsiServer(s)) expect(s).toMatch(/^[A-Za-z0-9._:[\]-]{1,253}$/);
        if (isIscsiSep(s)) expect([':::1:', '::::']).toContain(s);
      }),
      RUNS,
    );
  });
});

describe('dhcp-hosts.conf renderer', () => {
  it('writes only mac,hostname,infinite lines in grammar, one per valid record, and refuses the rest', () => {
    const host = fc.record({ mac: fc.oneof(validMac, anyText), hostname: fc.oneof(validId, anyText) });
    fc.assert(
      fc.property(fc.array(host, { maxLength: 20 }), (entries) => {
        const { text, refused } = renderDhcpHosts(entries);
        const lines = text === '' ? [] : text.slice(0, -1).split('\n');
        if (text !== '') expect(text.endsWith('\n')).toBe(true);
        for (const line of lines) {
          const [mac, hostname, ...rest] = line.split(',');
          expect(rest).toEqual(['infinite']);
          expect(mac).toMatch(MAC_LINE);
          expect(hostname).toMatch(ID_LINE);
        }
        expect(lines.length + refused.length).toBe(entries.length);
      }),
      RUNS,
    );
  });
});

describe('iPXE boot-vars renderer', () => {
  const LINE = [
    /^#!ipxe$/,
    /^# no per-worker boot vars found$/,
    /^# boot vars for ([a-z0-9][a-z0-9._-]{0,62}|[0-9a-f]{2}(:[0-9a-f]{2}){5}|unknown)$/,
    /^# ([a-z0-9][a-z0-9._-]{0,62}|[0-9a-f]{2}(:[0-9a-f]{2}){5}) (has no system disk yet|is in the device pool, bound to no worker yet: it reboots until it is bound)$/,
    /^set base-iqn iqn\.\d{4}-\d{2}\.[a-z0-9.:-]+$/,
    /^set iscsi-server [A-Za-z0-9._:[\]-]{1,253}$/,
    /^set iscsi-sep (:::1:|::::)$/,
    /^set menu-default [a-z-]+$/,
    /^set menu-timeout \d{1,8}$/,
  ];
  const value = fc.oneof(anyText, fc.integer(), fc.constantFrom(':::1:', '::::', 'reboot', 'debian', '127.0.0.1', '127.0.0.1:3260'));
  const vars = fc.record(
    { base_iqn: fc.oneof(validIqn, value), iscsi_server: value, iscsi_sep: value, menu_default: value, menu_timeout: fc.oneof(fc.nat(), value) },
    { requiredKeys: [] },
  );
  const subject = fc.oneof(fc.constant(null), validId, validMac, anyText);

  it('prints no line outside the script grammar, whatever the record holds', () => {
    fc.assert(
      fc.property(vars, subject, (v, s) => {
        const script = renderBootVarsScript({ vars: v as BootVars, subject: s });
        expect(script.endsWith('\n')).toBe(true);
        const lines = script.slice(0, -1).split('\n');
        expect(lines[0]).toBe('#!ipxe');
        for (const line of lines) expect(LINE.some((re) => re.test(line)), JSON.stringify(line)).toBe(true);
        expect(script).not.toMatch(/[\r\0\u2028\u0085]/);
      }),
      RUNS,
    );
  });
});
