import { describe, expect, it } from 'vitest';
import { isSecretKey, isSecretParam, redact, redactQuery, redactUrlCredentials } from './redact';

describe('redact', () => {
  it('replaces the value of every field named for a secret, at any depth', () => {
    const input = {
      op: 'agent.update',
      token: 'tok-1',
      agent_token: 'tok-2',
      consoleToken: 'tok-3',
      nested: { 'x-api-key': 'k1', client_secret: 's1', list: [{ password: 'p1' }, { Authorization: 'Bearer b1' }] },
      kubeconfig: 'apiVersion: v1',
      private_key: '-----BEGIN',
      privateKey: '-----BEGIN',
      credentials: { user: 'u' },
    };
    expect(redact(input)).toEqual({
      op: 'agent.update',
      token: '[redacted]',
      agent_token: '[redacted]',
      consoleToken: '[redacted]',
      nested: { 'x-api-key': '[redacted]', client_secret: '[redacted]', list: [{ password: '[redacted]' }, { Authorization: '[redacted]' }] },
      kubeconfig: '[redacted]',
      private_key: '[redacted]',
      privateKey: '[redacted]',
      credentials: '[redacted]',
    });
  });

  it('keeps fields that only mention a secret: token_rotated, kubeconfig_path, key_hash, a bare key', () => {
    const input = { token_rotated: true, kubeconfig_path: '/x/kubeconfig', key_hash: 'abc', key: 'menu', tokens_issued: 3, secret_set: false };
    expect(redact(input)).toEqual(input);
  });

  it('keeps empty values visible, so a log shows that none was given', () => {
    expect(redact({ token: '', password: null })).toEqual({ token: '', password: null });
  });

  it('removes credentials from URLs in any string, and leaves the input unchanged', () => {
    const input = { base_url: 'http://admin:hunter2@10.0.0.5:4840/', error: 'fetch https://u:p@h/x failed', plain: 'http://10.0.0.5:4840' };
    const copy = structuredClone(input);
    expect(redact(input)).toEqual({ base_url: 'http://[redacted]@10.0.0.5:4840/', error: 'fetch https://[redacted]@h/x failed', plain: 'http://10.0.0.5:4840' });
    expect(input).toEqual(copy);
    expect(redactUrlCredentials('user@example.org')).toBe('user@example.org');
  });

  it('names secret keys by their last word', () => {
    for (const k of ['token', 'TOKEN', 'bearer-token', 'IPXE_AGENT_TOKEN', 'api_key', 'secretKey', 'passwd']) expect(isSecretKey(k), k).toBe(true);
    for (const k of ['token_rotated', 'tokenRotated', 'key', 'monkey', 'keys', 'passwordless_login', 'tokenizer']) expect(isSecretKey(k), k).toBe(false);
  });

  it('redacts the values of query parameters named like secrets in a logged URL, and nothing else', () => {
    expect(redactQuery('/boot-vars?mac=02:00:00:00:00:01&token=t1&Password=p1&api_key=k1&key=k2&X-Amz-Signature=s1&state=ready#frag')).toBe(
      '/boot-vars?mac=02:00:00:00:00:01&token=[redacted]&Password=[redacted]&api_key=[redacted]&key=[redacted]&X-Amz-Signature=[redacted]&state=ready#frag',
    );
    // A name written percent-encoded is read decoded; a parameter without a value has nothing to hide.
    expect(redactQuery('/x?pass%77ord=p2&token&monkey=m')).toBe('/x?pass%77ord=[redacted]&token&monkey=m');
    expect(redactQuery('/workers')).toBe('/workers');
    for (const n of ['access_token', 'client_secret', 'pwd', 'sig', 'session_id', 'apiKey']) expect(isSecretParam(n), n).toBe(true);
    for (const n of ['mac', 'hostname', 'monkey', 'state', 'limit', 'format']) expect(isSecretParam(n), n).toBe(false);
  });
});
