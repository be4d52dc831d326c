/**
 * `expandWorkerNodes` on its own (issue 32, item 1): nodes given as `{workerId}` become hosts at
 * the address their worker reported, pinned to the key ironlens' client asks for first; a pin a
 * request gives for such a node must be one the worker reported. A fake directory stands for the
 * boot control plane's host reports.
 */
import { describe, expect, it } from 'vitest';
import { type AnyNodeInput, expandWorkerNodes, type WorkerDirectory, type WorkerHost } from './workers';

const ED = { algorithm: 'ssh-ed25519', fingerprint: 'SHA256:ed25519AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' };
const EC = { algorithm: 'ecdsa-sha2-nistp256', fingerprint: 'SHA256:ecdsaAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' };
const RSA = { algorithm: 'ssh-rsa', fingerprint: 'SHA256:rsaAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' };

/** The boot control plane's workers, as fixed records; counts what it was asked. */
class FakeWorkerDirectory implements WorkerDirectory {
  readonly asked: string[] = [];
  constructor(private readonly workers: WorkerHost[]) {}
  async find(workerId: string): Promise<WorkerHost | null> {
    this.asked.push(workerId);
    return this.workers.find((w) => w.workerId === workerId) ?? null;
  }
  async joined(): Promise<void> {}
}

const directory = () =>
  new FakeWorkerDirectory([
    { workerId: 'w1', address: '10.0.0.11', hostKeys: [RSA, EC, ED] },
    { workerId: 'w2', address: '10.0.0.12', hostKeys: [RSA] },
    { workerId: 'fresh', address: null, hostKeys: [] },
    { workerId: 'keyless', address: '10.0.0.14', hostKeys: [] },
    { workerId: 'twin', address: '10.0.0.11', hostKeys: [ED] },
  ]);

const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => 'expanded',
    (err: { code?: string }) => err.code,
  );

describe('expandWorkerNodes', () => {
  it('puts a worker node at its reported address, port 22, pinned to its ed25519 key; host nodes and their pins pass unchanged', async () => {
    const hostPin = { host: '10.9.9.9', port: 2222, fingerprint: 'SHA256:hostpinAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' };
    const nodes: AnyNodeInput[] = [{ workerId: 'w1', roles: ['control-plane'], username: 'debian' }, { host: '10.9.9.9', port: 2222, roles: ['worker'] }, { workerId: 'w2', roles: ['worker'] }];
    const out = await expandWorkerNodes(nodes, [hostPin], directory());
    expect(out.nodes).toEqual([
      { host: '10.0.0.11', port: 22, roles: ['control-plane'], username: 'debian' },
      { host: '10.9.9.9', port: 2222, roles: ['worker'] },
      { host: '10.0.0.12', port: 22, roles: ['worker'] },
    ]);
    expect(out.pins).toEqual([hostPin, { host: '10.0.0.11', port: 22, fingerprint: ED.fingerprint }, { host: '10.0.0.12', port: 22, fingerprint: RSA.fingerprint }]);
    expect([...out.workers]).toEqual([
      ['10.0.0.11:22', 'w1'],
      ['10.0.0.12:22', 'w2'],
    ]);
    expect(out.reported.get('10.0.0.11:22')).toEqual([RSA, EC, ED]);
  });

  it('takes a given pin that names one of the reported keys, and pins the preferred key in its place', async () => {
    const out = await expandWorkerNodes([{ workerId: 'w1', roles: ['control-plane'] }], [{ host: '10.0.0.11', fingerprint: RSA.fingerprint }], directory());
    expect(out.pins).toEqual([{ host: '10.0.0.11', port: 22, fingerprint: ED.fingerprint }]);
  });

  it('refuses a given pin that is none of the reported keys: bootstrap_host_keys_mismatch', async () => {
    const pin = { host: '10.0.0.11', port: 22, fingerprint: 'SHA256:someoneelseAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' };
    expect(await codeOf(expandWorkerNodes([{ workerId: 'w1', roles: ['control-plane'] }], [pin], directory()))).toBe('bootstrap_host_keys_mismatch');
    // A pin for another port of that address is not this node's: it passes.
    expect(await codeOf(expandWorkerNodes([{ workerId: 'w1', roles: ['control-plane'] }], [{ ...pin, port: 2200 }], directory()))).toBe('expanded');
  });

  it('refuses unknown, unreported and keyless workers, two workers at one address, and workers with no directory', async () => {
    const cases: Array<[AnyNodeInput[], WorkerDirectory | undefined, string]> = [
      [[{ workerId: 'nobody', roles: ['worker'] }], directory(), 'bootstrap_worker_unknown'],
      [[{ workerId: 'fresh', roles: ['worker'] }], directory(), 'bootstrap_worker_unreported'],
      [[{ workerId: 'keyless', roles: ['worker'] }], directory(), 'bootstrap_worker_unreported'],
      [[{ workerId: 'w1', roles: ['control-plane'] }, { workerId: 'twin', roles: ['worker'] }], directory(), 'bootstrap_node_invalid'],
      [[{ workerId: 'w1', roles: ['control-plane'] }], undefined, 'bootstrap_worker_unknown'],
    ];
    for (const [nodes, dir, code] of cases) expect(await codeOf(expandWorkerNodes(nodes, [], dir)), JSON.stringify(nodes)).toBe(code);
  });

  it('asks the directory nothing for host nodes alone', async () => {
    const d = directory();
    const out = await expandWorkerNodes([{ host: 'node-a', roles: ['control-plane'] }], [], d);
    expect(out.nodes).toEqual([{ host: 'node-a', roles: ['control-plane'] }]);
    expect(d.asked).toEqual([]);
  });
});
