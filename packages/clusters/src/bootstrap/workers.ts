import { isIP } from 'node:net';
import { AppError } from '@ironlens/core';
import type { WorkerNodeInput } from '../api/bootstrap';
import { type BootstrapNodeInput, type HostKeyPin, inventoryName } from './nodes';
import { HOST_KEY_ALGORITHMS } from './ssh.adapter';

/**
 * A worker the boot control plane booted, as the bootstrap needs it (issue 24): the address it
 * reported and its SSH host keys. `packages/cli` implements this from metal's host reports;
 * clusters never imports metal.
 */
export interface WorkerHost {
  workerId: string;
  /** The address to SSH to (the boot NIC's IPv4 from the report); null before the first report. */
  address: string | null;
  /** The reported host keys (`SHA256:…` as `ssh-keygen -lf` prints them). */
  hostKeys: Array<{ algorithm: string; fingerprint: string }>;
}

export interface WorkerDirectory {
  /** The worker, or null when there is no worker by that id. */
  find(workerId: string): Promise<WorkerHost | null>;
  /** The bootstrap registered these workers' cluster: each worker shows the cluster it joined. */
  joined(workerIds: string[], clusterId: string): Promise<void>;
  /**
   * The workers that joined this cluster, with the address each reported (issue 22: the gateway's
   * public URL prefers it). Optional: a directory without it gives the gateway no such preference.
   */
  joinedTo?(clusterId: string): Promise<WorkerHost[]>;
}

/**
 * The workers of a directory that joined a cluster and reported an address, ordered by worker id,
 * each with the node name the bootstrap's inventory gives that address (what the gateway's public
 * URL matches Ready nodes against). None when the directory cannot tell (no `joinedTo`); a
 * directory that fails throws, so its caller can say so.
 */
export async function joinedWorkerNodes(dir: Pick<WorkerDirectory, 'joinedTo'>, clusterId: string): Promise<Array<{ address: string; nodeName: string }>> {
  if (!dir.joinedTo) return [];
  const ws = await dir.joinedTo(clusterId);
  return ws
    .filter((w): w is WorkerHost & { address: string } => typeof w.address === 'string' && isIP(w.address) !== 0)
    .sort((a, b) => a.workerId.localeCompare(b.workerId))
    .map((w) => ({ address: w.address, nodeName: inventoryName(w.address) }));
}

/** A node named by its worker: ironlens knows its address and host keys (Lens' host form needs neither). */
// The request shape is the API schema's type (issue 19).
export type { WorkerNodeInput } from '../api/bootstrap';

export type AnyNodeInput = BootstrapNodeInput | WorkerNodeInput;

export const isWorkerNode = (n: AnyNodeInput | { host: string } | { workerId: string }): n is WorkerNodeInput => typeof (n as WorkerNodeInput).workerId === 'string';

/** The fingerprint to pin: the key ironlens' SSH client asks for first (ed25519, then ECDSA, RSA). */
export function preferredKey(keys: WorkerHost['hostKeys']): { algorithm: string; fingerprint: string } | null {
  for (const alg of HOST_KEY_ALGORITHMS) {
    const k = keys.find((x) => x.algorithm === alg || (alg.startsWith('rsa-sha2') && x.algorithm === 'ssh-rsa'));
    if (k) return k;
  }
  return keys[0] ?? null;
}

export interface ExpandedWorkers {
  /** Every node in the host form; worker nodes at their reported address, port 22. */
  nodes: BootstrapNodeInput[];
  /** The pins given, plus each worker node's reported key where none was given. */
  pins: HostKeyPin[];
  /** `address:22` → worker id, for the nodes given by worker. */
  workers: Map<string, string>;
  /** Each worker node's reported keys, by `address:22`. */
  reported: Map<string, WorkerHost['hostKeys']>;
}

/**
 * Turns `{workerId, roles, username?}` nodes into the host form with pins from the worker's own
 * report. A pin given for a worker's address must be one of its reported keys (else
 * `bootstrap_host_keys_mismatch`); an unknown worker is `bootstrap_worker_unknown`, one that has
 * not reported is `bootstrap_worker_unreported`. Host-form nodes and their pins pass unchanged.
 */
export async function expandWorkerNodes(nodes: readonly AnyNodeInput[], pins: readonly HostKeyPin[], directory: WorkerDirectory | undefined): Promise<ExpandedWorkers> {
  const out: BootstrapNodeInput[] = [];
  let outPins: HostKeyPin[] = [...pins];
  const workers = new Map<string, string>();
  const reported = new Map<string, WorkerHost['hostKeys']>();
  for (const node of nodes) {
    if (!isWorkerNode(node)) {
      out.push(node);
      continue;
    }
    if ('host' in node && node.host !== undefined) throw new AppError('bootstrap_node_invalid', `a node has both host and workerId (${JSON.stringify(node.workerId)})`);
    if (!directory) throw new AppError('bootstrap_worker_unknown', `workers are not known here (no boot control plane): ${JSON.stringify(node.workerId)}`);
    const w = await directory.find(node.workerId);
    if (!w) throw new AppError('bootstrap_worker_unknown', `no worker ${JSON.stringify(node.workerId)}`);
    const key = w.address ? preferredKey(w.hostKeys) : null;
    if (!w.address || !key) throw new AppError('bootstrap_worker_unreported', `worker ${w.workerId} has not reported its address and host keys yet (it reports when it has booted)`);
    const hostPort = `${w.address}:22`;
    if (workers.has(hostPort) && workers.get(hostPort) !== w.workerId) throw new AppError('bootstrap_node_invalid', `workers ${workers.get(hostPort)} and ${w.workerId} report the same address ${w.address}`);
    const given = pins.filter((p) => p.host.toLowerCase() === w.address && (p.port ?? 22) === 22);
    for (const p of given) {
      if (!w.hostKeys.some((k) => k.fingerprint === p.fingerprint)) {
        throw new AppError('bootstrap_host_keys_mismatch', `the pin for worker ${w.workerId} (${w.address}) is not one of the host keys it reported`, { workerId: w.workerId });
      }
    }
    // The key ironlens' client asks for first is pinned, whichever reported key a given pin named.
    const address = w.address;
    outPins = outPins.filter((p) => !(p.host.toLowerCase() === address && (p.port ?? 22) === 22));
    outPins.push({ host: address, port: 22, fingerprint: key.fingerprint });
    workers.set(hostPort, w.workerId);
    reported.set(hostPort, w.hostKeys);
    out.push({ host: w.address, port: 22, roles: node.roles, ...(node.username ? { username: node.username } : {}) });
  }
  return { nodes: out, pins: outPins, workers, reported };
}
