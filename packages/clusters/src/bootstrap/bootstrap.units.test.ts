import { describe, expect, it } from 'vitest';
import { logTail } from './bootstrap.service';
import { expandHostSpec, expandTargets } from './host-spec';
import { renderGroupVars, renderInventory, renderKnownHosts, renderPasswordVars, sshArgs } from './inventory';
import { resolveNodes } from './nodes';
import { isSupportedOs } from './preflight.service';
import { Redactor, Slots } from './redact';
import { type AnyNodeInput, expandWorkerNodes } from './workers';
import { sleep } from '@ironlens/core/testing';

const FP_A = `SHA256:${'A'.repeat(43)}`;
const FP_B = `SHA256:${'B'.repeat(43)}`;
const FP_C = `SHA256:${'C'.repeat(43)}`;

describe('host specs', () => {
  it('expands single addresses, comma lists, last-octet ranges, full ranges and host names, in order', () => {
    expect(expandHostSpec('10.0.0.5')).toEqual(['10.0.0.5']);
    expect(expandHostSpec('10.0.0.10-12, 10.0.0.1')).toEqual(['10.0.0.10', '10.0.0.11', '10.0.0.12', '10.0.0.1']);
    expect(expandHostSpec('10.0.0.254-10.0.1.1')).toEqual(['10.0.0.254', '10.0.0.255', '10.0.1.0', '10.0.1.1']);
    expect(expandHostSpec('Node-1.Lab')).toEqual(['node-1.lab']);
  });

  it('refuses what is not a host, a reversed range and more than 256 hosts', () => {
    for (const bad of ['10.0.0.12-10', '10.0.0.300', '10.0.0.1-300', 'node_1', '', '10.0.0.1,', '-node', '10.0.0.1-10.0.0.x', '1.2.3']) {
      expect(() => expandHostSpec(bad), bad).toThrow(expect.objectContaining({ code: 'bootstrap_host_invalid', status: 422 }));
    }
    expect(() => expandHostSpec('0.0.0.0-255.255.255.255')).toThrow(expect.objectContaining({ code: 'bootstrap_too_many_hosts' }));
    expect(expandHostSpec('10.0.0.0-10.0.0.255')).toHaveLength(256);
    expect(() => expandTargets([{ host: '10.0.0.0-255' }, { host: '10.0.1.0' }])).toThrow(expect.objectContaining({ code: 'bootstrap_too_many_hosts' }));
  });

  it('refuses unspecified, broadcast, multicast and link-local addresses and numeric-looking names (issue 18)', () => {
    for (const bad of ['169.254.169.254', '0.0.0.0', '255.255.255.255', '224.0.0.1', '239.255.255.250', '240.0.0.1', '0.1.2.3', '169.254.0.1-3', '10.0.0.1,169.254.1.1', '0x7f000001', '0x7f.1', 'node.0x1', 'host.123']) {
      expect(() => expandHostSpec(bad), bad).toThrow(expect.objectContaining({ code: 'bootstrap_host_not_allowed', status: 422 }));
    }
    expect(() => expandHostSpec('2130706433')).toThrow(expect.objectContaining({ code: 'bootstrap_host_invalid' }));
    // A range that crosses into link-local is refused as a whole.
    expect(() => expandHostSpec('169.253.255.254-169.254.0.1')).toThrow(expect.objectContaining({ code: 'bootstrap_host_not_allowed' }));
    // Loopback, private addresses and ordinary names stay allowed.
    expect(expandHostSpec('127.0.0.2,10.0.0.1,192.168.1.1,node-0x1.lab,n1.example')).toEqual(['127.0.0.2', '10.0.0.1', '192.168.1.1', 'node-0x1.lab', 'n1.example']);
  });

  it('removes duplicates of the same host and port, keeps the same host on another port', () => {
    expect(expandTargets([{ host: '10.0.0.1,10.0.0.1-2' }, { host: '10.0.0.2', port: 22 }, { host: '10.0.0.2', port: 2222 }]).map((t) => `${t.host}:${t.port}`)).toEqual([
      '10.0.0.1:22',
      '10.0.0.2:22',
      '10.0.0.2:2222',
    ]);
  });
});

describe('resolving nodes', () => {
  it('merges the roles of a host named twice and names it from its address', () => {
    const nodes = resolveNodes(
      [
        { host: '10.0.0.1', roles: ['worker'] },
        { host: '10.0.0.1-2', roles: ['control-plane'] },
      ],
      [
        { host: '10.0.0.1', fingerprint: FP_A },
        { host: '10.0.0.2', port: 22, fingerprint: FP_B },
      ],
    );
    expect(nodes.map((n) => [n.name, n.roles, n.username, n.fingerprint])).toEqual([
      ['10-0-0-1', ['control-plane', 'worker'], 'root', FP_A],
      ['10-0-0-2', ['control-plane'], 'root', FP_B],
    ]);
  });

  it('wants pins for exactly the expanded hosts, and a control-plane node', () => {
    const nodes = [{ host: '10.0.0.1-2', roles: ['control-plane' as const] }];
    expect(() => resolveNodes(nodes, [{ host: '10.0.0.1', fingerprint: FP_A }])).toThrow(expect.objectContaining({ code: 'bootstrap_host_keys_mismatch' }));
    expect(() =>
      resolveNodes(nodes, [
        { host: '10.0.0.1', fingerprint: FP_A },
        { host: '10.0.0.2', fingerprint: FP_B },
        { host: '10.0.0.3', fingerprint: FP_C },
      ]),
    ).toThrow(expect.objectContaining({ code: 'bootstrap_host_keys_mismatch' }));
    expect(() => resolveNodes(nodes, [{ host: '10.0.0.1', fingerprint: FP_A }, { host: '10.0.0.2', port: 2222, fingerprint: FP_B }])).toThrow(
      expect.objectContaining({ code: 'bootstrap_host_keys_mismatch' }),
    );
    expect(() => resolveNodes([{ host: '10.0.0.1', roles: ['worker'] }], [{ host: '10.0.0.1', fingerprint: FP_A }])).toThrow(
      expect.objectContaining({ code: 'bootstrap_control_plane_missing' }),
    );
    expect(() => resolveNodes([{ host: '10.0.0.1', roles: ['control-plane'], username: 'root; rm -rf /' }], [{ host: '10.0.0.1', fingerprint: FP_A }])).toThrow(
      expect.objectContaining({ code: 'bootstrap_node_invalid' }),
    );
  });
});

describe('rendering the job directory', () => {
  const nodes = resolveNodes(
    [
      { host: '10.0.0.1', roles: ['control-plane'], privateKey: 'KEY' },
      { host: '10.0.0.2', port: 2222, roles: ['worker'], username: 'ubuntu', password: 'pa"ss{{x}}' },
    ],
    [
      { host: '10.0.0.1', fingerprint: FP_A },
      { host: '10.0.0.2', port: 2222, fingerprint: FP_B },
    ],
  );

  it('writes the inventory in Kubespray\'s contract', () => {
    expect(renderInventory(nodes, (n) => (n.name === '10-0-0-1' ? { keyFile: '/d/secrets/10-0-0-1.key' } : {}))).toBe(`all:
  hosts:
    10-0-0-1:
      ansible_host: 10.0.0.1
      ansible_port: 22
      ansible_user: root
      ansible_ssh_private_key_file: /d/secrets/10-0-0-1.key
    10-0-0-2:
      ansible_host: 10.0.0.2
      ansible_port: 2222
      ansible_user: ubuntu
  children:
    kube_control_plane:
      hosts:
        10-0-0-1:
    etcd:
      hosts:
        10-0-0-1:
    kube_node:
      hosts:
        10-0-0-2:
    k8s_cluster:
      children:
        kube_control_plane:
        kube_node:
`);
  });

  it('writes the proxy and kubeconfig_localhost, never templated', () => {
    expect(renderGroupVars({ mode: 'custom', httpProxy: 'http://p:3128', noProxy: '127.0.0.1,.svc' })).toBe(
      '# written by ironlens for this bootstrap job\nkubeconfig_localhost: true\nhttp_proxy: !unsafe "http://p:3128"\nno_proxy: !unsafe "127.0.0.1,.svc"\n',
    );
    expect(renderGroupVars({ mode: 'auto', httpProxy: 'http://p:3128' })).toBe('# written by ironlens for this bootstrap job\nkubeconfig_localhost: true\n');
    expect(renderPasswordVars(nodes[1])).toBe('ansible_password: !unsafe "pa\\"ss{{x}}"\nansible_become_password: !unsafe "pa\\"ss{{x}}"\n');
    expect(renderPasswordVars(nodes[0])).toBeUndefined();
  });

  it('writes known_hosts from the verified keys, bracketing a port other than 22', () => {
    expect(
      renderKnownHosts([
        { host: '10.0.0.1', port: 22, key: { algorithm: 'ssh-ed25519', fingerprint: FP_A, blob: 'AAAAC3Nz' } },
        { host: '10.0.0.2', port: 2222, key: { algorithm: 'ssh-rsa', fingerprint: FP_B, blob: 'AAAAB3Nz' } },
      ]),
    ).toBe('10.0.0.1 ssh-ed25519 AAAAC3Nz\n[10.0.0.2]:2222 ssh-rsa AAAAB3Nz\n');
    expect(() => renderKnownHosts([{ host: '10.0.0.1 evil', port: 22, key: { algorithm: 'ssh-rsa', fingerprint: FP_A, blob: 'AAAA' } }])).toThrow();
  });

  it('puts strict checking and our known_hosts first on the ssh command line', () => {
    expect(sshArgs('/data/jobs/bootstrap-0123456789ab/known_hosts')).toBe(
      '-o StrictHostKeyChecking=yes -o UserKnownHostsFile=/data/jobs/bootstrap-0123456789ab/known_hosts -o GlobalKnownHostsFile=/dev/null -o UpdateHostKeys=no -o CheckHostIP=no -o ControlMaster=no -o ControlPath=none -o ConnectTimeout=30 -o ConnectionAttempts=3',
    );
    expect(sshArgs("/a b/it's")).toContain(`-o UserKnownHostsFile='/a b/it'"'"'s'`);
  });
});

describe('redaction', () => {
  it('removes the request\'s secrets and generic secret shapes from a log line', () => {
    const key = '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----\n';
    const r = new Redactor([key, 'hunter2-secret', undefined]);
    expect(r.line('sudo password is hunter2-secret!')).toBe('sudo password is [redacted]!');
    expect(r.line('key: b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ')).toBe('key: [redacted]');
    expect(r.line('"ansible_password": "x1"')).toBe('"ansible_password": "[redacted]"');
    expect(r.line('client-key-data: LS0tLS1CRUdJTg==')).toBe('client-key-data: [redacted]');
    expect(r.line('Authorization: Bearer abc.def')).toBe('Authorization: Bearer [redacted]');
    expect(r.line('proxy http://u:p@proxy:3128')).toBe('proxy http://[redacted]@proxy:3128');
    expect(r.line('token=abc123')).toBe('token=[redacted]');
  });
});

describe('job slots', () => {
  it('lets `size` holders in and the next one only when a slot is handed back', async () => {
    const slots = new Slots(1);
    const ac = new AbortController();
    const first = await slots.acquire(ac.signal);
    let second = false;
    const p = slots.acquire(ac.signal).then((release) => {
      second = true;
      return release;
    });
    await sleep(10);
    expect(second).toBe(false);
    first();
    (await p)();
    expect(second).toBe(true);
    const cancelled = new AbortController();
    const hold = await slots.acquire(ac.signal);
    const waiting = slots.acquire(cancelled.signal).catch((e) => e.message);
    cancelled.abort(new Error('gone'));
    expect(await waiting).toBe('gone');
    hold();
  });
});

describe('operating systems', () => {
  it('accepts the distributions Kubespray supports and refuses others', () => {
    expect(isSupportedOs('debian', '12')).toBe(true);
    expect(isSupportedOs('ubuntu', '24.04')).toBe(true);
    expect(isSupportedOs('rocky', '9.4')).toBe(true);
    expect(isSupportedOs('ubuntu', '20.04')).toBe(false);
    expect(isSupportedOs('debian', '10')).toBe(false);
    expect(isSupportedOs('alpine', '3.20')).toBe(false);
    expect(isSupportedOs('toString', '')).toBe(false);
  });
});

describe('log tail', () => {
  it('keeps the last bytes, starting at a whole line', () => {
    const lines = Array.from({ length: 10 }, (_, i) => `line ${i} ${'x'.repeat(10)}`);
    expect(logTail(lines, 1000)).toBe(lines.join('\n'));
    // Each line is 18 bytes plus a newline: 40 bytes reach into line 7, so the tail starts at line 8.
    expect(logTail(lines, 40)).toBe(`${lines[8]}\n${lines[9]}`);
    expect(Buffer.byteLength(logTail(Array.from({ length: 5000 }, () => 'é'.repeat(20)), 32 * 1024))).toBeLessThanOrEqual(32 * 1024);
  });
});

describe('nodes given by worker', () => {
  it('refuses a node that names both a host and a worker, before asking the directory', async () => {
    const directory = {
      find: async () => {
        throw new Error('the directory must not be asked');
      },
      joined: async () => {},
    };
    const both = { workerId: 'w1', host: '10.0.0.9', roles: ['control-plane'] } as AnyNodeInput;
    await expect(expandWorkerNodes([both], [], directory)).rejects.toMatchObject({ code: 'bootstrap_node_invalid' });
    // The same node without the host reaches the directory.
    await expect(expandWorkerNodes([{ workerId: 'w1', roles: ['control-plane'] }], [], directory)).rejects.toThrow('the directory must not be asked');
  });
});
