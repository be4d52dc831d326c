import { type Env, type Exec, type ExecResult, execStreaming } from '@ironlens/core';
import type { ContainerCliName } from '../config';

/** What the panel needs from kind. */
export interface KindClusters {
  /** Cluster names, as `kind get clusters` prints them. Rejects `notFound` when kind is missing. */
  list(): Promise<string[]>;
  /** `kind create cluster`: every output line goes to `onLine`; aborting kills it. */
  create(name: string, configFile: string, run: { signal?: AbortSignal; onLine?: (line: string) => void; timeoutMs?: number }): Promise<void>;
  /** Writes the cluster's kubeconfig to `file`. */
  exportKubeconfig(name: string, file: string): Promise<void>;
  /** `kind delete cluster`; never rejects. */
  delete(name: string, timeoutMs?: number): Promise<{ ok: boolean; output: string }>;
}

/** The real kind CLI, through argument arrays. With podman, kind is told so by `KIND_EXPERIMENTAL_PROVIDER`. */
export class KindCli implements KindClusters {
  private readonly env: Env;

  constructor(
    private readonly exec: Exec,
    env: Env,
    containerCli: ContainerCliName,
    private readonly bin = 'kind',
  ) {
    this.env = containerCli === 'podman' ? { ...env, KIND_EXPERIMENTAL_PROVIDER: 'podman' } : { ...env };
  }

  async list(): Promise<string[]> {
    const r = await this.exec([this.bin, 'get', 'clusters'], { env: this.env, timeoutMs: 30_000 });
    // With no clusters kind prints "No kind clusters found." on stderr and nothing on stdout.
    return r.stdout
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean);
  }

  async create(name: string, configFile: string, run: { signal?: AbortSignal; onLine?: (line: string) => void; timeoutMs?: number }): Promise<void> {
    await execStreaming([this.bin, 'create', 'cluster', '--name', name, '--config', configFile], {
      env: this.env,
      signal: run.signal,
      timeoutMs: run.timeoutMs,
      onLine: (line) => run.onLine?.(line),
    });
  }

  async exportKubeconfig(name: string, file: string): Promise<void> {
    await this.exec([this.bin, 'export', 'kubeconfig', '--name', name, '--kubeconfig', file], { env: this.env, timeoutMs: 60_000 });
  }

  async delete(name: string, timeoutMs = 180_000): Promise<{ ok: boolean; output: string }> {
    try {
      const r: ExecResult = await this.exec([this.bin, 'delete', 'cluster', '--name', name], { env: this.env, timeoutMs, allowFailure: true });
      return { ok: r.code === 0, output: `${r.stdout}${r.stderr}`.trim() };
    } catch (err) {
      const notFound = (err as { notFound?: boolean }).notFound;
      return { ok: false, output: notFound ? `${this.bin}: command not found` : (err as Error).message };
    }
  }
}
