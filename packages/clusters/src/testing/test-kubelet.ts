import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { KubeHarness } from '@ironlens/kube-harness';
import { CoreV1Api, type V1Container, type V1Pod } from '@kubernetes/client-node';
import type { PodNetwork } from './pod-network';

/**
 * What a kubelet does once a pod is bound, for the kwok nodes of the deployments suite (kwok
 * only writes pod status; nothing runs): pull the images (from a registry stand-in that holds
 * `images`), configure the containers (every Secret an environment variable reads must exist),
 * then start them — a model server is the vLLM stand-in, run at the pod's IP in the pod network
 * with the container's own command line, which exits as vLLM would on an argument it does not
 * know; the routing sidecar is its stand-in. When a step fails, the verdict is written as pod
 * annotations, which a kwok stage (`KUBELET_VERDICT_STAGE`) turns into the container status the
 * real kubelet writes (`ImagePullBackOff`, `CreateContainerConfigError`, `CrashLoopBackOff` with
 * its restarts and exit code). What each container printed is served by the kubelet Summary
 * stand-in's `/containerLogs` (the API server's `pods/{name}/log`).
 */

export const VERDICT = 'kubelet.ironlens.test/waiting-reason';
const MESSAGE = 'kubelet.ironlens.test/waiting-message';
const RESTARTS = 'kubelet.ironlens.test/restart-count';
const EXIT = 'kubelet.ironlens.test/exit-code';
const PHASE = 'kubelet.ironlens.test/phase';

/** The kwok stage that writes a kubelet verdict (the annotations above) into the pod's status; it outweighs `pod-ready`. */
export const KUBELET_VERDICT_STAGE = {
  apiVersion: 'kwok.x-k8s.io/v1alpha1',
  kind: 'Stage',
  metadata: { name: 'pod-kubelet-verdict' },
  spec: {
    resourceRef: { apiGroup: 'v1', kind: 'Pod' },
    selector: {
      matchExpressions: [
        { key: `.metadata.annotations["${VERDICT}"]`, operator: 'Exists' },
        { key: '.metadata.deletionTimestamp', operator: 'DoesNotExist' },
      ],
    },
    weight: 10000,
    next: {
      statusTemplate: [
        '{{ $now := Now }}',
        '{{ $a := .metadata.annotations }}',
        `{{ $reason := index $a "${VERDICT}" }}`,
        `{{ $message := or (index $a "${MESSAGE}") "" }}`,
        `{{ $restarts := or (index $a "${RESTARTS}") "0" }}`,
        `{{ $exit := or (index $a "${EXIT}") "" }}`,
        'conditions:',
        '- lastTransitionTime: {{ $now | Quote }}',
        '  status: "True"',
        '  type: Initialized',
        '- lastTransitionTime: {{ $now | Quote }}',
        '  status: "False"',
        '  reason: ContainersNotReady',
        '  type: Ready',
        '- lastTransitionTime: {{ $now | Quote }}',
        '  status: "False"',
        '  reason: ContainersNotReady',
        '  type: ContainersReady',
        '- lastTransitionTime: {{ $now | Quote }}',
        '  status: "True"',
        '  type: PodScheduled',
        'containerStatuses:',
        '{{ range .spec.containers }}',
        '- image: {{ .image | Quote }}',
        '  name: {{ .name | Quote }}',
        '  ready: false',
        '  started: false',
        '  restartCount: {{ $restarts }}',
        '  state:',
        '    waiting:',
        '      reason: {{ $reason | Quote }}',
        '      message: {{ $message | Quote }}',
        '  {{ if $exit }}',
        '  lastState:',
        '    terminated:',
        '      exitCode: {{ $exit }}',
        '      reason: Error',
        '      startedAt: {{ $now | Quote }}',
        '      finishedAt: {{ $now | Quote }}',
        '  {{ end }}',
        '{{ end }}',
        `phase: {{ or (index $a "${PHASE}") "Pending" | Quote }}`,
      ].join('\n'),
    },
  },
};

type Logs = { current: string; previous: string };

export class TestKubelet {
  private timer?: NodeJS.Timeout;
  private busy = false;
  private readonly handled = new Set<string>();
  /** The pod (uid) whose containers listen at each IP. */
  private readonly ips = new Map<string, string>();
  private readonly logs = new Map<string, Logs>();
  private readonly core: CoreV1Api;
  /** Pods (`app.kubernetes.io/instance` values) whose model servers never answer: started, never listening. */
  readonly silent = new Set<string>();
  /** The `vllm serve` arguments each pod's model server was started with, by pod name (after its command ran). */
  readonly commandLines = new Map<string, string[]>();
  /** What each pod's kubelet decided, by pod name: `running`, or the waiting reason. */
  readonly verdicts = new Map<string, string>();
  error: Error | null = null;
  /** Holds `vllm`, which only prints its arguments (NUL-separated): what a container's command passes to `vllm serve`. */
  private readonly bin = mkdtempSync(join(tmpdir(), 'ironlens-vllm-argv-'));

  constructor(
    private readonly h: KubeHarness,
    private readonly net: PodNetwork,
    /** The images the registry stand-in holds. */
    private readonly images: Set<string>,
  ) {
    this.core = h.kubeConfig().makeApiClient(CoreV1Api);
    writeFileSync(join(this.bin, 'vllm'), '#!/bin/sh\nfor a in "$@"; do printf \'%s\\0\' "$a"; done\n', { mode: 0o755 });
    h.kubelet.setLogSource((ns, pod, container, o) => {
      const l = this.logs.get(`${ns}/${pod}/${container}`);
      return l ? (o.previous ? l.previous : l.current) : null;
    });
  }

  start(): void {
    this.timer = setInterval(() => {
      if (this.busy) return;
      this.busy = true;
      this.round()
        .catch((e) => {
          this.error = e as Error;
        })
        .finally(() => {
          this.busy = false;
        });
    }, 200);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    while (this.busy) await new Promise((r) => setTimeout(r, 20));
    rmSync(this.bin, { recursive: true, force: true });
  }

  private async verdict(p: V1Pod, annotations: Record<string, string>): Promise<void> {
    const name = p.metadata!.name!;
    this.verdicts.set(name, annotations[VERDICT]);
    await this.h.apply([{ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: p.metadata!.namespace!, annotations } }], { fieldManager: 'test-kubelet' });
  }

  private async round(): Promise<void> {
    const pods = (await this.core.listPodForAllNamespaces({ labelSelector: 'ironlens.dev/deployment' })).items;
    // A pod that is gone or going has its containers stopped (kwok gives its IP to the next pod).
    const live = new Set(pods.filter((p) => !p.metadata?.deletionTimestamp).map((p) => p.metadata?.uid ?? ''));
    for (const [ip, uid] of this.ips) {
      if (live.has(uid)) continue;
      await this.net.stop(ip);
      this.ips.delete(ip);
    }
    for (const p of pods) {
      const uid = p.metadata?.uid ?? '';
      const ip = p.status?.podIP;
      if (this.handled.has(uid) || !ip || p.status?.phase !== 'Running' || p.metadata?.deletionTimestamp) continue;
      this.handled.add(uid);
      const held = this.ips.get(ip);
      if (held && held !== uid) await this.net.stop(ip);
      this.ips.set(ip, uid);
      const ns = p.metadata!.namespace!;
      const name = p.metadata!.name!;
      const containers = p.spec?.containers ?? [];
      const missing = containers.map((c) => c.image ?? '').find((i) => !this.images.has(i));
      if (missing) {
        await this.verdict(p, { [VERDICT]: 'ImagePullBackOff', [MESSAGE]: `Back-off pulling image "${missing}"` });
        continue;
      }
      let absent: string | null = null;
      for (const c of containers) {
        for (const e of c.env ?? []) {
          const ref = e.valueFrom?.secretKeyRef;
          if (!ref?.name || ref.optional) continue;
          const s = await this.core.readNamespacedSecret({ name: ref.name, namespace: ns }).catch(() => null);
          if (!s || !(ref.key in (s.data ?? {}))) absent ??= ref.name;
        }
      }
      if (absent) {
        await this.verdict(p, { [VERDICT]: 'CreateContainerConfigError', [MESSAGE]: `secret "${absent}" not found` });
        continue;
      }
      if (this.silent.has(p.metadata?.labels?.['app.kubernetes.io/instance'] ?? '')) {
        this.verdicts.set(name, 'silent');
        continue;
      }
      const vllm = containers.find((c) => c.name === 'vllm');
      if (vllm) {
        const args = await vllmServeArgs(vllm, this.bin);
        this.commandLines.set(name, args);
        const out = await this.net.serve(ip, args);
        if (out.error) throw new Error(`serve ${ip}: ${out.error}`);
        if (out.exit !== undefined) {
          this.logs.set(`${ns}/${name}/vllm`, { current: '', previous: out.log });
          await this.verdict(p, {
            [VERDICT]: 'CrashLoopBackOff',
            [MESSAGE]: `back-off 40s restarting failed container=vllm pod=${name}_${ns}`,
            [RESTARTS]: '3',
            [EXIT]: String(out.exit),
            [PHASE]: 'Running',
          });
          continue;
        }
        this.logs.set(`${ns}/${name}/vllm`, { current: out.log, previous: '' });
      }
      for (const side of (p.spec?.initContainers ?? []).filter((c) => c.restartPolicy === 'Always')) {
        for (const port of side.ports ?? []) await this.net.sidecar(ip, port.containerPort, sidecarModelServerPort(side.args ?? []));
      }
      this.verdicts.set(name, 'running');
    }
  }
}

/**
 * The arguments `vllm serve` gets in a container: `vllm serve <args>` as they are, or — the
 * wide-EP script (`/bin/sh -c '<script>' vllm <args>`) — what the container's command line, run as
 * the runtime runs it with the container's literal environment (LeaderWorkerSet's webhook writes
 * `LWS_LEADER_ADDRESS`, `LWS_WORKER_INDEX`…), passes to `vllm serve`: a `vllm` on PATH that only
 * prints its arguments.
 */
async function vllmServeArgs(c: V1Container, bin: string): Promise<string[]> {
  if (c.command?.[0] === 'vllm' && c.command[1] === 'serve' && c.command.length === 2) return c.args ?? [];
  if (c.command?.[0] !== '/bin/sh' || c.command[1] !== '-c') throw new Error(`the kubelet stand-in cannot run ${JSON.stringify(c.command)}`);
  const env: Record<string, string> = {};
  for (const e of c.env ?? []) if (e.value !== undefined) env[e.name] = e.value;
  env.PATH = `${bin}:/usr/bin:/bin`;
  const { stdout } = await promisify(execFile)('/bin/sh', [...c.command.slice(1), ...(c.args ?? [])], { env, timeout: 10_000 });
  const argv = stdout.split('\0').slice(0, -1);
  if (argv[0] !== 'serve') throw new Error(`the container's command did not run \`vllm serve\`: ${JSON.stringify(argv)}`);
  return argv.slice(1);
}

/** The model-server port of llm-d's routing sidecar: `--model-server-port` (or the deprecated `--vllm-port`), else its default 8200. */
function sidecarModelServerPort(args: string[]): number {
  const v = args.find((a) => a.startsWith('--model-server-port='))?.split('=')[1] ?? args.find((a) => a.startsWith('--vllm-port='))?.split('=')[1] ?? '8200';
  return Number(v);
}
