import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Stand-in `kind`, `kubectl`, `docker` and `podman` executables for tests: this machine has
 * no container engine, so kind cannot run. They are small Node scripts that print what the
 * real tools print (kind's ` • stage ...` / ` ✓ stage` lines on stderr, kubectl's tables),
 * keep their "clusters" as files in a state directory, record every argument list to a log
 * file, and fail on demand through environment variables:
 *
 * - `STANDIN_KIND_STEP_MS`: delay between kind's stage lines (default 30)
 * - `STANDIN_KIND_FAIL_AT`: kind create fails at the stage starting with this text
 * - `STANDIN_KIND_GATE_DIR`: kind create waits, after printing each stage line, until the file
 *   `<dir>/<n>` exists (`n` counts the stages from 0): a test opens each gate once it saw the stage
 * - `STANDIN_KIND_HANG_AT`: kind create hangs at that stage, with a child process (like the
 *   `docker run` real kind starts) whose pid goes to `<state>/kind-child.pid`; with
 *   `STANDIN_KIND_HANG_NAME`, only for the cluster of that name
 * - `STANDIN_KIND_API_ADDR`: address kind writes into the kubeconfig (default 127.0.0.1)
 * - `STANDIN_ENGINE_DOWN=1`: `docker info` / `podman info` fail as with a stopped daemon
 * - `STANDIN_KUBECTL_NOT_READY=1`: `kubectl wait` times out
 */
export type StandInTool = 'kind' | 'kubectl' | 'docker' | 'podman';

export interface StandInCall {
  tool: StandInTool;
  args: string[];
  /** `KIND_EXPERIMENTAL_PROVIDER` as the tool saw it. */
  provider: string | null;
}

export interface StandIns {
  binDir: string;
  stateDir: string;
  logFile: string;
  /** An environment whose PATH holds only the stand-ins. */
  env(extra?: Record<string, string>): Record<string, string | undefined>;
  calls(tool?: StandInTool): StandInCall[];
  /** Clusters the stand-in kind has (its "containers"). */
  clusters(): string[];
  addCluster(name: string, workers?: number): void;
  cleanup(): void;
}

const COMMON = String.raw`
const fs = require('node:fs');
const path = require('node:path');
const STATE = process.env.STANDIN_STATE;
// (plain JavaScript of the stand-in executables, which import nothing of ironlens)
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
function record(tool) {
  fs.appendFileSync(process.env.STANDIN_LOG, JSON.stringify({ tool, args: process.argv.slice(2), provider: process.env.KIND_EXPERIMENTAL_PROVIDER || null }) + '\n');
}
function clusterFile(name) { return path.join(STATE, 'clusters', name + '.json'); }
function readCluster(name) { try { return JSON.parse(fs.readFileSync(clusterFile(name), 'utf8')); } catch { return null; } }
function nodeNames(c) {
  const out = [c.name + '-control-plane'];
  for (let i = 1; i <= c.workers; i++) out.push(c.name + '-worker' + (i === 1 ? '' : String(i)));
  return out;
}
function flag(args, name) { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : undefined; }
`;

const KIND = String.raw`
${COMMON}
record('kind');
const args = process.argv.slice(2);
const err = (s) => process.stderr.write(s + '\n');
async function main() {
  const cmd = args.slice(0, 2).join(' ');
  if (cmd === 'get clusters') {
    fs.mkdirSync(path.join(STATE, 'clusters'), { recursive: true });
    const names = fs.readdirSync(path.join(STATE, 'clusters')).filter((f) => f.endsWith('.json')).map((f) => f.slice(0, -5)).sort();
    if (names.length === 0) err('No kind clusters found.');
    for (const n of names) process.stdout.write(n + '\n');
    return 0;
  }
  if (cmd === 'create cluster') {
    const name = flag(args, '--name') || 'kind';
    const config = flag(args, '--config');
    const text = config ? fs.readFileSync(config, 'utf8') : '';
    const workers = (text.match(/role: worker/g) || []).length;
    const image = (text.match(/image: (\S+)/) || [])[1] || 'kindest/node:v1.31.0';
    if (readCluster(name)) {
      err('ERROR: failed to create cluster: node(s) already exist for a cluster with the name "' + name + '"');
      return 1;
    }
    const step = Number(process.env.STANDIN_KIND_STEP_MS || 30);
    const stages = [
      'Ensuring node image (' + image + ') 🖼',
      'Preparing nodes ' + Array(1 + workers).fill('📦').join(' '),
      'Writing configuration 📜',
      'Starting control-plane 🕹️',
      'Installing CNI 🔌',
      'Installing StorageClass 💾',
    ];
    if (workers > 0) stages.push('Joining worker nodes 🚜');
    err('Creating cluster "' + name + '" ...');
    const gates = process.env.STANDIN_KIND_GATE_DIR;
    for (const [i, s] of stages.entries()) {
      err(' • ' + s + '  ...');
      if (gates) {
        const gate = path.join(gates, String(i));
        const end = Date.now() + 60000;
        while (!fs.existsSync(gate)) {
          if (Date.now() > end) {
            err('ERROR: the stand-in gate ' + gate + ' was never opened');
            return 1;
          }
          await sleep(5);
        }
      }
      const hangHere = process.env.STANDIN_KIND_HANG_AT && s.startsWith(process.env.STANDIN_KIND_HANG_AT);
      if (hangHere && (!process.env.STANDIN_KIND_HANG_NAME || process.env.STANDIN_KIND_HANG_NAME === name)) {
        const child = require('node:child_process').spawn(process.execPath, ['-e', 'setTimeout(() => {}, 600000)'], { stdio: 'ignore' });
        fs.writeFileSync(path.join(STATE, 'kind-child.pid'), String(child.pid));
        await sleep(600000);
      }
      await sleep(step);
      if (process.env.STANDIN_KIND_FAIL_AT && s.startsWith(process.env.STANDIN_KIND_FAIL_AT)) {
        err(' ✗ ' + s);
        const nodes = readCluster(name) ? nodeNames(readCluster(name)) : [];
        try { fs.unlinkSync(clusterFile(name)); } catch {}
        err('Deleted nodes: ' + JSON.stringify(nodes));
        err('ERROR: failed to create cluster: failed to init node with kubeadm: command "docker exec --privileged ' + name + '-control-plane kubeadm init --config=/kind/kubeadm.conf --skip-token-print --v=6" failed with error: exit status 1');
        return 1;
      }
      if (s.startsWith('Preparing nodes')) {
        fs.mkdirSync(path.join(STATE, 'clusters'), { recursive: true });
        fs.writeFileSync(clusterFile(name), JSON.stringify({ name, workers, image, port: 40000 + Math.floor(Math.random() * 20000) }));
      }
      err(' ✓ ' + s);
    }
    err('Set kubectl context to "kind-' + name + '"');
    err('You can now use your cluster with:');
    err('');
    err('kubectl cluster-info --context kind-' + name);
    err('');
    err('Thanks for using kind! 😊');
    return 0;
  }
  if (cmd === 'export kubeconfig') {
    const name = flag(args, '--name') || 'kind';
    const file = flag(args, '--kubeconfig');
    const c = readCluster(name);
    if (!c) {
      err('ERROR: could not locate any control plane nodes for cluster named \'' + name + '\'. Use the --name option to select a different cluster');
      return 1;
    }
    const addr = process.env.STANDIN_KIND_API_ADDR || '127.0.0.1';
    const ctx = 'kind-' + name;
    const yaml = [
      'apiVersion: v1',
      'clusters:',
      '- cluster:',
      '    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==',
      '    server: https://' + addr + ':' + c.port,
      '  name: ' + ctx,
      'contexts:',
      '- context:',
      '    cluster: ' + ctx,
      '    user: ' + ctx,
      '  name: ' + ctx,
      'current-context: ' + ctx,
      'kind: Config',
      'preferences: {}',
      'users:',
      '- name: ' + ctx,
      '  user:',
      '    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==',
      '    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQo=',
      '',
    ].join('\n');
    fs.writeFileSync(file, yaml);
    err('Set kubectl context to "' + ctx + '"');
    return 0;
  }
  if (cmd === 'delete cluster') {
    const name = flag(args, '--name') || 'kind';
    err('Deleting cluster "' + name + '" ...');
    const c = readCluster(name);
    try { fs.unlinkSync(clusterFile(name)); } catch {}
    err('Deleted nodes: ' + JSON.stringify(c ? nodeNames(c) : []));
    return 0;
  }
  err('ERROR: unknown command "' + args.join(' ') + '" for "kind"');
  return 1;
}
main().then((code) => process.exit(code));
`;

const KUBECTL = String.raw`
${COMMON}
record('kubectl');
const args = process.argv.slice(2);
const kubeconfig = flag(args, '--kubeconfig');
const rest = args.filter((a, i) => a !== '--kubeconfig' && args[i - 1] !== '--kubeconfig');
const err = (s) => process.stderr.write(s + '\n');
function pad(rows) {
  const w = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(w[i] + 3))).join('')).join('\n') + '\n';
}
async function main() {
  let text = '';
  try { text = fs.readFileSync(kubeconfig, 'utf8'); } catch { err('error: stat ' + kubeconfig + ': no such file or directory'); return 1; }
  const name = ((text.match(/current-context: kind-(\S+)/) || [])[1]) || '';
  const server = ((text.match(/server: (\S+)/) || [])[1]) || '';
  const c = readCluster(name);
  if (!c) { err('The connection to the server ' + server.replace('https://', '') + ' was refused - did you specify the right host or port?'); return 1; }
  const nodes = nodeNames(c);
  const version = (c.image.split(':')[1]) || 'v1.31.0';
  const cmd = rest.join(' ');
  if (cmd === 'get nodes -o wide') {
    const rows = [['NAME', 'STATUS', 'ROLES', 'AGE', 'VERSION', 'INTERNAL-IP', 'EXTERNAL-IP', 'OS-IMAGE', 'KERNEL-VERSION', 'CONTAINER-RUNTIME']];
    nodes.forEach((n, i) => rows.push([n, 'Ready', i === 0 ? 'control-plane' : '<none>', '5m', version, '172.18.0.' + (i + 2), '<none>', 'Debian GNU/Linux 12 (bookworm)', '6.1.0-28-amd64', 'containerd://1.7.18']));
    process.stdout.write(pad(rows));
    return 0;
  }
  if (cmd === 'get pods -A') {
    const cp = nodes[0];
    const rows = [['NAMESPACE', 'NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE']];
    rows.push(['kube-system', 'coredns-7db6d8ff4d-4xk2p', '1/1', 'Running', '0', '5m']);
    rows.push(['kube-system', 'etcd-' + cp, '1/1', 'Running', '0', '5m']);
    rows.push(['kube-system', 'kube-apiserver-' + cp, '1/1', 'Running', '0', '5m']);
    nodes.forEach((n, i) => rows.push(['kube-system', 'kindnet-' + (10000 + i).toString(36), '1/1', 'Running', '0', '5m']));
    rows.push(['local-path-storage', 'local-path-provisioner-988d74bc-m7z9r', '1/1', 'Running', '0', '5m']);
    process.stdout.write(pad(rows));
    return 0;
  }
  if (rest[0] === 'wait') {
    if (process.env.STANDIN_KUBECTL_NOT_READY === '1') {
      await sleep(50);
      err('error: timed out waiting for the condition on nodes/' + nodes[nodes.length - 1]);
      return 1;
    }
    for (const n of nodes) process.stdout.write('node/' + n + ' condition met\n');
    return 0;
  }
  err('error: unknown command "' + cmd + '" for "kubectl"');
  return 1;
}
main().then((code) => process.exit(code));
`;

const ENGINE = (tool: 'docker' | 'podman') => String.raw`
${COMMON}
record('${tool}');
const args = process.argv.slice(2);
if (args[0] === 'info') {
  if (process.env.STANDIN_ENGINE_DOWN === '1') {
    ${
      tool === 'docker'
        ? `process.stdout.write('Client:\\n Version:    27.3.1\\n Context:    default\\n\\nServer:\\n');
    process.stderr.write('Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?\\n');
    process.exit(1);`
        : `process.stderr.write('Error: unable to connect to Podman socket: failed to connect: dial unix /run/podman/podman.sock: connect: no such file or directory\\n');
    process.exit(125);`
    }
  }
  process.stdout.write(${tool === 'docker' ? `'Client:\\n Version:    27.3.1\\n\\nServer:\\n Containers: 3\\n Server Version: 27.3.1\\n Storage Driver: overlay2\\n'` : `'host:\\n  arch: amd64\\n  os: linux\\nversion:\\n  Version: 5.2.2\\n'`});
  process.exit(0);
}
process.stderr.write('unknown command\n');
process.exit(1);
`;

export function writeStandIns(tools: StandInTool[] = ['kind', 'kubectl', 'docker', 'podman']): StandIns {
  const root = mkdtempSync(join(tmpdir(), 'ironlens-kind-standins-'));
  const binDir = join(root, 'bin');
  const stateDir = join(root, 'state');
  const logFile = join(root, 'calls.jsonl');
  mkdirSync(binDir);
  mkdirSync(join(stateDir, 'clusters'), { recursive: true });
  writeFileSync(logFile, '');
  const sources: Record<StandInTool, string> = { kind: KIND, kubectl: KUBECTL, docker: ENGINE('docker'), podman: ENGINE('podman') };
  for (const t of tools) {
    const file = join(binDir, t);
    writeFileSync(file, `#!${process.execPath}\n// Test stand-in for ${t} (ironlens kind panel tests).\n${sources[t]}`);
    chmodSync(file, 0o755);
  }
  return {
    binDir,
    stateDir,
    logFile,
    env: (extra = {}) => ({ PATH: binDir, HOME: root, STANDIN_LOG: logFile, STANDIN_STATE: stateDir, ...extra }),
    calls: (tool) =>
      readFileSync(logFile, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as StandInCall)
        .filter((c) => !tool || c.tool === tool),
    clusters: () =>
      existsSync(join(stateDir, 'clusters'))
        ? readdirSync(join(stateDir, 'clusters'))
            .filter((f) => f.endsWith('.json'))
            .map((f) => f.slice(0, -5))
            .sort()
        : [],
    addCluster: (name, workers = 1) =>
      writeFileSync(join(stateDir, 'clusters', `${name}.json`), JSON.stringify({ name, workers, image: 'kindest/node:v1.31.0', port: 41234 })),
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
}
