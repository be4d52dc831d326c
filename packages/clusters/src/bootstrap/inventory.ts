import { stringify } from 'yaml';
import { isExactHost } from './host-spec';
import type { BootstrapProxy } from '../api/bootstrap';
import type { ResolvedNode } from './nodes';
import type { HostKey } from './ssh.adapter';

/** The proxy for the target nodes (Lens' BootstrapProxyConfig), the API schema's type (issue 19). `auto`/`none`: no proxy variables are set. */
export type { BootstrapProxy } from '../api/bootstrap';

export const PROXY_URL = /^https?:\/\/[A-Za-z0-9._~%!$&'()*+,;=:@[\]/-]+$/;
export const NO_PROXY = /^[A-Za-z0-9._\-:/*,[\] ]*$/;

/** Ansible must never template a value that came from a request: `!unsafe` plus a JSON (= YAML double-quoted) string. */
function unsafe(value: string): string {
  return `!unsafe ${JSON.stringify(value)}`;
}

/** How a node's credentials reach Ansible: a key file, or a password in a 0600 host_vars file. */
export interface NodeCredentialFiles {
  /** Private key file for `ansible_ssh_private_key_file` (the node's own, or ironlens' key). */
  keyFile?: string;
}

/**
 * `inventory.yml` in Kubespray's contract: `kube_control_plane` and `etcd` are the control-plane
 * nodes, `kube_node` the workers, `k8s_cluster` their parent; each host named from its address.
 */
export function renderInventory(nodes: readonly ResolvedNode[], files: (n: ResolvedNode) => NodeCredentialFiles): string {
  const hosts: Record<string, Record<string, string | number>> = {};
  for (const n of nodes) {
    if (!isExactHost(n.host)) throw new Error(`refusing to render host ${JSON.stringify(n.host)}`);
    const vars: Record<string, string | number> = { ansible_host: n.host, ansible_port: n.port, ansible_user: n.username };
    const keyFile = files(n).keyFile;
    if (keyFile) vars.ansible_ssh_private_key_file = keyFile;
    hosts[n.name] = vars;
  }
  const group = (pred: (n: ResolvedNode) => boolean) => ({ hosts: Object.fromEntries(nodes.filter(pred).map((n) => [n.name, null])) });
  const cp = (n: ResolvedNode) => n.roles.includes('control-plane');
  return stringify(
    {
      all: {
        hosts,
        children: {
          kube_control_plane: group(cp),
          etcd: group(cp),
          kube_node: group((n) => n.roles.includes('worker')),
          k8s_cluster: { children: { kube_control_plane: null, kube_node: null } },
        },
      },
    },
    { nullStr: '' },
  );
}

/** `group_vars/all/ironlens.yml`: the proxy (unless `auto`/`none`) and `kubeconfig_localhost: true`. */
export function renderGroupVars(proxy: BootstrapProxy | undefined): string {
  const lines = ['# written by ironlens for this bootstrap job', 'kubeconfig_localhost: true'];
  if (proxy?.mode === 'custom') {
    if (proxy.httpProxy) lines.push(`http_proxy: ${unsafe(proxy.httpProxy)}`);
    if (proxy.httpsProxy) lines.push(`https_proxy: ${unsafe(proxy.httpsProxy)}`);
    if (proxy.noProxy) lines.push(`no_proxy: ${unsafe(proxy.noProxy)}`);
  }
  return `${lines.join('\n')}\n`;
}

/** `host_vars/<name>.yml` (0600) for a node that gave a password: login (when it has no key) and sudo. */
export function renderPasswordVars(node: ResolvedNode): string | undefined {
  if (!node.password) return undefined;
  const lines: string[] = [];
  if (!node.privateKey) lines.push(`ansible_password: ${unsafe(node.password)}`);
  lines.push(`ansible_become_password: ${unsafe(node.password)}`);
  return `${lines.join('\n')}\n`;
}

/** `known_hosts` from the keys that matched their pins (`[host]:port` when the port is not 22). */
export function renderKnownHosts(entries: ReadonlyArray<{ host: string; port: number; key: HostKey }>): string {
  return entries
    .map(({ host, port, key }) => {
      if (!isExactHost(host)) throw new Error(`refusing to render host ${JSON.stringify(host)}`);
      if (!/^[a-z0-9@.-]+$/.test(key.algorithm) || !/^[A-Za-z0-9+/=]+$/.test(key.blob)) throw new Error('refusing to render a malformed host key');
      return `${port === 22 ? host : `[${host}]:${port}`} ${key.algorithm} ${key.blob}\n`;
    })
    .join('');
}

/** shlex-safe quoting for one word of `ANSIBLE_SSH_ARGS` (Ansible splits it with shlex). */
export function shellWord(word: string): string {
  return /^[A-Za-z0-9_./=:@%+-]+$/.test(word) ? word : `'${word.replace(/'/g, `'"'"'`)}'`;
}

/**
 * The ssh options every Ansible connection gets, ahead of anything Kubespray's `ansible.cfg`
 * adds: ssh keeps the first value it sees per option, so `StrictHostKeyChecking=yes` and our
 * `known_hosts` win over Kubespray's `UserKnownHostsFile=/dev/null` and Ansible's
 * `StrictHostKeyChecking=no`. No connection sharing: every connection checks the key anew, and no
 * master process outlives the job.
 */
export function sshArgs(knownHostsFile: string): string {
  return [
    '-o StrictHostKeyChecking=yes',
    `-o UserKnownHostsFile=${shellWord(knownHostsFile)}`,
    '-o GlobalKnownHostsFile=/dev/null',
    '-o UpdateHostKeys=no',
    '-o CheckHostIP=no',
    '-o ControlMaster=no',
    '-o ControlPath=none',
    '-o ConnectTimeout=30',
    '-o ConnectionAttempts=3',
  ].join(' ');
}
