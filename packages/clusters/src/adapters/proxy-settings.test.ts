import { describe, expect, it } from 'vitest';
import type { ProxyConfig } from '../shared/domain';
import { proxyUrlFor } from './proxy-settings';

const custom = (p: Partial<ProxyConfig>): ProxyConfig => ({ mode: 'custom', httpProxy: null, httpsProxy: null, noProxy: null, ...p });

describe('proxyUrlFor', () => {
  it('uses httpsProxy for an https API server, falling back to httpProxy', () => {
    expect(proxyUrlFor('https://10.0.0.1:6443', custom({ httpsProxy: 'http://s:3128', httpProxy: 'http://h:3128' }))).toBe('http://s:3128');
    expect(proxyUrlFor('https://10.0.0.1:6443', custom({ httpProxy: 'http://h:3128' }))).toBe('http://h:3128');
    expect(proxyUrlFor('http://10.0.0.1:8080', custom({ httpsProxy: 'http://s:3128' }))).toBeUndefined();
  });

  it('goes direct for hosts matched by noProxy: exact, domain suffix, CIDR, host:port, *', () => {
    const p = (noProxy: string) => custom({ httpsProxy: 'http://s:3128', noProxy });
    expect(proxyUrlFor('https://api.example.com:6443', p('example.com'))).toBeUndefined();
    expect(proxyUrlFor('https://api.example.com:6443', p('.example.com'))).toBeUndefined();
    expect(proxyUrlFor('https://api.example.com:6443', p('other.com,.svc'))).toBe('http://s:3128');
    expect(proxyUrlFor('https://10.1.2.3:6443', p('10.0.0.0/8'))).toBeUndefined();
    expect(proxyUrlFor('https://11.1.2.3:6443', p('10.0.0.0/8'))).toBe('http://s:3128');
    expect(proxyUrlFor('https://10.1.2.3:6443', p('10.1.2.3:6443'))).toBeUndefined();
    expect(proxyUrlFor('https://10.1.2.3:6443', p('10.1.2.3:443'))).toBe('http://s:3128');
    expect(proxyUrlFor('https://anything:6443', p('*'))).toBeUndefined();
    expect(proxyUrlFor('https://notexample.com:6443', p('example.com'))).toBe('http://s:3128');
  });

  it('mode none is direct; mode auto (a record of before issue 33: system) reads the process environment', () => {
    expect(proxyUrlFor('https://a:1', { mode: 'none', httpProxy: 'http://x:1', httpsProxy: 'http://x:1', noProxy: null })).toBeUndefined();
    expect(proxyUrlFor('https://a:1', { mode: 'system' as unknown as ProxyConfig['mode'], httpProxy: null, httpsProxy: null, noProxy: null }, { HTTPS_PROXY: 'http://env:3128' })).toBe('http://env:3128');
    const sys: ProxyConfig = { mode: 'auto', httpProxy: null, httpsProxy: null, noProxy: null };
    expect(proxyUrlFor('https://a:1', sys, { HTTPS_PROXY: 'http://env:3128' })).toBe('http://env:3128');
    expect(proxyUrlFor('https://a:1', sys, { https_proxy: 'http://env:3128', no_proxy: 'a' })).toBeUndefined();
    expect(proxyUrlFor('https://a:1', sys, {})).toBeUndefined();
  });
});
