import { chmodSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SecretBox } from './secret-box';

describe('SecretBox', () => {
  it('round-trips a secret and never stores the plain text', () => {
    const box = SecretBox.fromKey(Buffer.alloc(32, 7));
    const sealed = box.seal('client-key-data: c2VjcmV0', 'cluster:abcd0123:kubeconfig');
    expect(sealed.startsWith('v1:')).toBe(true);
    expect(sealed).not.toContain('client-key-data');
    expect(sealed).not.toContain('c2VjcmV0');
    expect(box.openText(sealed, 'cluster:abcd0123:kubeconfig')).toBe('client-key-data: c2VjcmV0');
  });

  it('refuses a value sealed for another purpose, with another key, or tampered with', () => {
    const box = SecretBox.fromKey(Buffer.alloc(32, 7));
    const sealed = box.seal('x', 'a');
    expect(() => box.open(sealed, 'b')).toThrow(/cannot be opened/);
    expect(() => SecretBox.fromKey(Buffer.alloc(32, 8)).open(sealed, 'a')).toThrow(/cannot be opened/);
    const raw = Buffer.from(sealed.slice(3), 'base64');
    raw[raw.length - 1] ^= 1;
    expect(() => box.open(`v1:${raw.toString('base64')}`, 'a')).toThrow(/cannot be opened/);
    expect(() => box.open('plain', 'a')).toThrow(/not a sealed secret/);
  });

  it('creates a 0600 key file on first start and reuses it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ironlens-secretbox-'));
    const a = SecretBox.fromEnv({}, dir);
    expect(statSync(join(dir, 'secret.key')).mode & 0o777).toBe(0o600);
    const b = SecretBox.fromEnv({}, dir);
    expect(b.openText(a.seal('hello'))).toBe('hello');
    expect(readFileSync(join(dir, 'secret.key'), 'utf8')).toMatch(/^[0-9a-f]{64}\n$/);
  });

  it('refuses a key file readable by others', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ironlens-secretbox-'));
    writeFileSync(join(dir, 'secret.key'), `${'ab'.repeat(32)}\n`);
    chmodSync(join(dir, 'secret.key'), 0o644);
    expect(() => SecretBox.fromEnv({}, dir)).toThrow(/readable by others/);
  });

  it('takes IRONLENS_SECRET_KEY as hex or base64 and refuses anything else', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ironlens-secretbox-'));
    const hex = 'cd'.repeat(32);
    const a = SecretBox.fromEnv({ IRONLENS_SECRET_KEY: hex }, dir);
    const b = SecretBox.fromEnv({ IRONLENS_SECRET_KEY: Buffer.from(hex, 'hex').toString('base64') }, dir);
    expect(b.openText(a.seal('same key'))).toBe('same key');
    expect(() => SecretBox.fromEnv({ IRONLENS_SECRET_KEY: 'too-short' }, dir)).toThrow(/64 hex characters or base64/);
  });
});
