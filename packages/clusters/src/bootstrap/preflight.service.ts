import type { IronlensKey } from './ironlens-key';
import type { NodeRole, ResolvedNode } from './nodes';
import { type HostKey, mapLimit, SshConnectError, type SshHosts, type SshSession } from './ssh.adapter';
import type { PreflightCheck, PreflightItem, PreflightResult } from '../api/bootstrap';

// The answers are the API schemas' types (issue 19).
export type { PreflightCheck, PreflightItem, PreflightResult } from '../api/bootstrap';
export type CheckStatus = PreflightCheck['status'];
export type CheckId = PreflightCheck['id'];

/** The checks, in the order they run and are reported. */
export const CHECKS: ReadonlyArray<{ id: CheckId; label: string }> = [
  { id: 'ssh', label: 'SSH connectivity' },
  { id: 'sudo', label: 'Passwordless sudo' },
  { id: 'hostname', label: 'Valid hostname' },
  { id: 'os', label: 'Supported operating system' },
  { id: 'existing_k8s', label: 'No existing Kubernetes' },
  { id: 'memory', label: 'Enough memory' },
];

/**
 * Kubespray's minimums (`minimal_master_memory_mb`, `minimal_node_memory_mb` in
 * roles/kubernetes/preinstall/defaults), compared with MemTotal in MiB as Ansible's
 * `ansible_memtotal_mb` is.
 */
export const MIN_MEMORY_MB: Record<NodeRole, number> = { 'control-plane': 1500, worker: 1024 };

/**
 * The distributions Kubespray v2.31.0 lists as supported, by `/etc/os-release` ID; a list of
 * VERSION_ID prefixes, or `null` for every version.
 */
export const SUPPORTED_OS: Record<string, string[] | null> = {
  debian: ['11', '12', '13'],
  ubuntu: ['22.04', '24.04'],
  rhel: ['8', '9', '10'],
  centos: ['8', '9', '10'],
  almalinux: ['8', '9', '10'],
  rocky: ['8', '9', '10'],
  ol: ['8', '9'],
  fedora: ['39', '40', '41', '42'],
  flatcar: null,
  fedoracoreos: null,
  'opensuse-leap': ['15'],
  'opensuse-tumbleweed': null,
  amzn: ['2'],
  kylin: null,
  uos: null,
  openEuler: null,
};

/** A Kubernetes node name: a lowercase RFC 1123 subdomain. */
const NODE_HOSTNAME = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$/;

/** Paths whose presence means Kubernetes is (or was) installed. */
const EXISTING_K8S_SCRIPT =
  'for f in /etc/kubernetes/admin.conf /etc/kubernetes/kubelet.conf /usr/local/bin/kubelet /usr/bin/kubelet /etc/systemd/system/kubelet.service /lib/systemd/system/kubelet.service; do if [ -e "$f" ]; then echo "$f"; fi; done; true';

export interface PreflightOptions {
  /** Per-host SSH connect timeout. */
  timeoutMs: number;
  /** Hosts checked at once. Default is `16`. */
  concurrency?: number;
  signal?: AbortSignal;
}

/** Connects to each node with its pinned key and runs the checks Kubespray would fail on. */
export class PreflightService {
  constructor(
    private readonly ssh: SshHosts,
    private readonly key: IronlensKey,
  ) {}

  async run(nodes: readonly ResolvedNode[], opts: PreflightOptions): Promise<PreflightResult> {
    const { items, allPassed } = await this.runWithKeys(nodes, opts);
    return { items, allPassed };
  }

  /** `run`, plus the host keys that matched their pins (`host:port` → key), for `known_hosts`. */
  async runWithKeys(nodes: readonly ResolvedNode[], opts: PreflightOptions): Promise<PreflightResult & { hostKeys: Map<string, HostKey> }> {
    const hostKeys = new Map<string, HostKey>();
    const items = await mapLimit(nodes, opts.concurrency ?? 16, (n) => this.checkNode(n, opts, (k) => hostKeys.set(`${n.host}:${n.port}`, k)));
    return { items, allPassed: items.every((i) => i.state === 'passed'), hostKeys };
  }

  /** Opens a pinned, authenticated session with the node's credentials (ironlens' key when it gives none). */
  connect(node: ResolvedNode, opts: { timeoutMs: number; signal?: AbortSignal }): Promise<SshSession> {
    const auth = node.privateKey || node.password ? { privateKey: node.privateKey, password: node.password } : { privateKey: this.key.privateKey() };
    return this.ssh.connect({ host: node.host, port: node.port, username: node.username, fingerprint: node.fingerprint, ...auth }, opts);
  }

  private async checkNode(node: ResolvedNode, opts: PreflightOptions, onKey: (key: HostKey) => void): Promise<PreflightItem> {
    const checks: PreflightCheck[] = [];
    const put = (id: CheckId, status: CheckStatus, detail?: string) => {
      const label = CHECKS.find((c) => c.id === id)!.label;
      checks.push(detail === undefined ? { id, label, status } : { id, label, status, detail });
    };
    let session: SshSession | undefined;
    try {
      session = await this.connect(node, opts);
      onKey(session.hostKey);
      put('ssh', 'passed', 'reachable');
    } catch (err) {
      const detail = err instanceof SshConnectError ? err.message : `ssh failed: ${(err as Error).message}`;
      put('ssh', 'failed', detail);
      for (const c of CHECKS.slice(1)) put(c.id, 'skipped', 'ssh failed');
      return { host: node.host, roles: node.roles, state: 'failed', error: detail, checks };
    }
    try {
      const run = async (cmd: string) => session!.exec(cmd, opts.timeoutMs);
      const sudo = await run('sudo -n true');
      put('sudo', sudo.code === 0 ? 'passed' : 'failed', sudo.code === 0 ? undefined : firstLine(sudo.stderr) || `sudo exited ${sudo.code}`);

      const hn = (await run('hostname')).stdout.trim();
      put('hostname', NODE_HOSTNAME.test(hn) ? 'passed' : 'failed', NODE_HOSTNAME.test(hn) ? hn : `${JSON.stringify(hn)} is not a lowercase RFC 1123 name`);

      const os = parseOsRelease((await run('cat /etc/os-release')).stdout);
      const supported = isSupportedOs(os.id, os.versionId);
      put('os', supported ? 'passed' : 'failed', `${os.prettyName || os.id || 'unknown'}${supported ? '' : ' is not supported by Kubespray v2.31.0'}`);

      const found = (await run(EXISTING_K8S_SCRIPT)).stdout.split('\n').map((l) => l.trim()).filter(Boolean);
      put('existing_k8s', found.length === 0 ? 'passed' : 'failed', found.length === 0 ? undefined : `found ${found.join(', ')}`);

      const mem = /^MemTotal:\s+(\d+)\s+kB/m.exec((await run('cat /proc/meminfo')).stdout);
      const mb = mem ? Math.floor(Number(mem[1]) / 1024) : 0;
      const need = Math.max(...node.roles.map((r) => MIN_MEMORY_MB[r]));
      put('memory', mb >= need ? 'passed' : 'failed', `${mb} MiB (at least ${need} MiB)`);
    } catch (err) {
      // A check that could not run (the connection dropped): it fails, the rest are skipped.
      const done = new Set(checks.map((c) => c.id));
      const next = CHECKS.find((c) => !done.has(c.id));
      if (next) put(next.id, 'failed', (err as Error).message);
      for (const c of CHECKS) if (!checks.some((x) => x.id === c.id)) put(c.id, 'skipped');
    } finally {
      session.close();
    }
    const failed = checks.find((c) => c.status === 'failed');
    return failed
      ? { host: node.host, roles: node.roles, state: 'failed', error: `${failed.label}: ${failed.detail ?? 'failed'}`, checks }
      : { host: node.host, roles: node.roles, state: 'passed', checks };
  }
}

function firstLine(text: string): string {
  return text.trim().split('\n')[0] ?? '';
}

export function parseOsRelease(text: string): { id: string; versionId: string; prettyName: string } {
  const get = (k: string) => {
    const m = new RegExp(`^${k}=(.*)$`, 'm').exec(text);
    return m ? m[1].trim().replace(/^["']|["']$/g, '') : '';
  };
  return { id: get('ID'), versionId: get('VERSION_ID'), prettyName: get('PRETTY_NAME') };
}

export function isSupportedOs(id: string, versionId: string): boolean {
  if (!Object.hasOwn(SUPPORTED_OS, id)) return false;
  const versions = SUPPORTED_OS[id];
  if (versions === null) return true;
  return versions.some((v) => versionId === v || versionId.startsWith(`${v}.`));
}
