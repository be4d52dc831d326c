import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sleep } from '@ironlens/core/testing';
import { KubeConfig } from '@kubernetes/client-node';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { checkKubeconfig } from '../registry/cluster.service';
import { loadCheckedKubeconfig } from './kubeconfig';

// Issue 18, findings 1 and 3: the check must refuse whatever @kubernetes/client-node would load
// as a command, a plugin or a file of this host — judged on what the client really loads from
// the same text (js-yaml, merge keys applied), never on another parser's reading.
const dir = mkdtempSync(join(tmpdir(), `ironlens-kc-prop-${process.pid}-`));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const TOKEN_TEXT = 'token-read-from-a-host-file';
const tokenFile = join(dir, 'token');
writeFileSync(tokenFile, TOKEN_TEXT);
const certFile = join(dir, 'cert.pem');
writeFileSync(certFile, 'not a cert');
const marker = join(dir, 'PWNED');

/** A key → value line (YAML flow values) that would make the client run or read something. */
const USER_DANGERS: Array<[string, string]> = [
  ['exec', `{apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: [-c, "touch ${marker}"]}`],
  ['auth-provider', '{name: oidc, config: {client-id: x}}'],
  ['authProvider', '{name: oidc}'],
  ['token-file', tokenFile],
  ['tokenFile', tokenFile],
  ['client-certificate', certFile],
  ['clientCertificate', certFile],
  ['client-key', certFile],
  ['clientKey', certFile],
];
const CLUSTER_DANGERS: Array<[string, string]> = [
  ['certificate-authority', certFile],
  ['certificateAuthority', certFile],
];

type Placement = 'plain' | 'merge-inline' | 'merge-anchor' | 'merge-list' | 'alias-whole' | 'absent';

interface Shape {
  user: { danger: number; placement: Placement };
  cluster: { danger: number; placement: Placement };
  mergeElsewhere: boolean;
}

/** Renders a kubeconfig whose user/cluster carry one danger, placed directly, by merge key or by alias. */
function render(s: Shape): string {
  const anchors: string[] = [];
  const place = (key: string, value: string, p: Placement, safe: string, anchor: string): string => {
    switch (p) {
      case 'absent':
        return `{${safe}}`;
      case 'plain':
        return `{${safe}, ${key}: ${value}}`;
      case 'merge-inline':
        return `{${safe}, <<: {${key}: ${value}}}`;
      case 'merge-anchor':
        anchors.push(`${anchor}: &${anchor} {${key}: ${value}}`);
        return `{${safe}, <<: *${anchor}}`;
      case 'merge-list':
        anchors.push(`${anchor}: &${anchor} {${key}: ${value}}`);
        return `{${safe}, <<: [*${anchor}, {x-unused: 1}]}`;
      case 'alias-whole':
        anchors.push(`${anchor}: &${anchor} {${safe}, ${key}: ${value}}`);
        return `*${anchor}`;
    }
  };
  const [uk, uv] = USER_DANGERS[s.user.danger];
  const [ck, cv] = CLUSTER_DANGERS[s.cluster.danger];
  const user = place(uk, uv, s.user.placement, 'token: embedded', 'u');
  const cluster = place(ck, cv, s.cluster.placement, 'server: "https://127.0.0.1:6443"', 'c');
  const lines = [
    ...anchors.map((a) => `x-${a}`),
    'apiVersion: v1',
    'kind: Config',
    `clusters: [{name: c, cluster: ${cluster}}]`,
    `users: [{name: u, user: ${user}}]`,
    `contexts: [{name: c, context: {cluster: c, user: u}}]`,
    s.mergeElsewhere ? 'preferences: {<<: {colors: true}}' : 'preferences: {}',
    'current-context: c',
  ];
  return `${lines.join('\n')}\n`;
}

/** What the client itself loads from the text would run or read a host file. */
function clientWouldUseTheHost(text: string): boolean {
  const kc = new KubeConfig();
  kc.loadFromString(text);
  return (
    kc.users.some((u) => !!u.exec || !!u.authProvider || !!u.certFile || !!u.keyFile || u.token === TOKEN_TEXT) ||
    kc.clusters.some((c) => !!c.caFile)
  );
}

function refused(text: string): boolean {
  try {
    checkKubeconfig(text);
    return false;
  } catch (e) {
    expect((e as { code?: string }).code).toBe('invalid_kubeconfig');
    return true;
  }
}

const shape = fc.record({
  user: fc.record({ danger: fc.nat({ max: USER_DANGERS.length - 1 }), placement: fc.constantFrom<Placement>('plain', 'merge-inline', 'merge-anchor', 'merge-list', 'alias-whole', 'absent') }),
  cluster: fc.record({ danger: fc.nat({ max: CLUSTER_DANGERS.length - 1 }), placement: fc.constantFrom<Placement>('plain', 'merge-inline', 'merge-anchor', 'merge-list', 'alias-whole', 'absent') }),
  mergeElsewhere: fc.boolean(),
});

describe('the kubeconfig check and @kubernetes/client-node agree', () => {
  it('refuses every kubeconfig the client would load with a command, a plugin or a host file (merge keys, anchors, both spellings)', () => {
    fc.assert(
      fc.property(shape, (s) => {
        const text = render(s);
        if (clientWouldUseTheHost(text)) expect(refused(text), text).toBe(true);
        // Merge keys are refused outright, wherever they are.
        if (text.includes('<<')) expect(refused(text), text).toBe(true);
        if (!refused(text)) {
          // What the check hands the client holds nothing from the host either.
          const kc = loadCheckedKubeconfig(text);
          expect(kc.users.some((u) => u.exec || u.authProvider || u.certFile || u.keyFile || u.token === TOKEN_TEXT)).toBe(false);
          expect(kc.clusters.some((c) => c.caFile)).toBe(false);
        }
      }),
      { numRuns: 400 },
    );
    expect(existsSync(marker)).toBe(false);
  });

  it('refuses the merge-key exec of the issue, and accepts a plain embedded kubeconfig', () => {
    const evil = render({ user: { danger: 0, placement: 'merge-inline' }, cluster: { danger: 0, placement: 'absent' }, mergeElsewhere: false });
    expect(clientWouldUseTheHost(evil)).toBe(true);
    expect(refused(evil)).toBe(true);
    const fine = render({ user: { danger: 0, placement: 'absent' }, cluster: { danger: 0, placement: 'absent' }, mergeElsewhere: false });
    expect(refused(fine)).toBe(false);
  });

  it('refuses a token-file on a FIFO without opening it (the event loop keeps turning)', async () => {
    const fifo = join(dir, `fifo-${process.pid}`);
    execFileSync('mkfifo', [fifo]);
    const text = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token-file: ${fifo}}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`;
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5);
    const started = Date.now();
    // A worker would be stuck in readFileSync(fifo) here before the fix; the check never opens it.
    expect(refused(text)).toBe(true);
    await sleep(50);
    clearInterval(timer);
    expect(Date.now() - started).toBeLessThan(1000);
    // A blocking read of the FIFO would never return (the test would time out); the timer ticking at all shows the loop ran meanwhile (a count above 1 depends on the machine's load).
    expect(ticks).toBeGreaterThan(0);
  });
});

describe('kubeconfig servers', () => {
  const withServer = (server: string) => `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "${server}"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`;
  it.each([
    ['a fragment', 'http://127.0.0.1:18440/devices#'],
    ['a query', 'http://127.0.0.1:18440/devices?x='],
    ['user info', 'https://admin:secret@127.0.0.1:6443'],
    ['an empty user info', 'https://@127.0.0.1:6443'],
    ['the metadata address', 'http://169.254.169.254/latest'],
    ['a link-local IPv6 address', 'https://[fe80::1]:6443'],
    ['a mapped link-local address', 'https://[::ffff:169.254.169.254]:6443'],
    ['a metadata name', 'http://metadata.google.internal'],
    ['a file URL', 'file:///etc/passwd'],
  ])('refuses %s', (_what, server) => {
    expect(refused(withServer(server))).toBe(true);
  });

  it('accepts a link-local server when IRONLENS_CLUSTER_ALLOW_LINK_LOCAL allows it, and loopback always', () => {
    expect(() => checkKubeconfig(withServer('https://169.254.10.1:6443'), { allowLinkLocal: true })).not.toThrow();
    expect(refused(withServer('https://127.0.0.1:6443/some/prefix'))).toBe(false);
  });
});
