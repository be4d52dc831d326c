import type { Env, Exec } from '@ironlens/core';
import { ExecAbortedError, execStreaming } from '@ironlens/core';

/** A kubectl answer: exit code and what it printed (stdout, or stderr when it failed). */
export interface KubectlOutput {
  rc: number;
  output: string;
}

/** What the panel asks kubectl, always with an explicit kubeconfig file. */
export interface Kubectl {
  getNodesWide(kubeconfig: string): Promise<KubectlOutput>;
  getPodsAll(kubeconfig: string): Promise<KubectlOutput>;
  /** Waits until every node reports Ready, or the timeout passes. Aborting stops it. */
  waitNodesReady(kubeconfig: string, timeoutS: number, signal?: AbortSignal): Promise<KubectlOutput>;
}

export const KUBECTL_MISSING_RC = 127;

export class KubectlCli implements Kubectl {
  constructor(
    private readonly exec: Exec,
    private readonly env: Env,
    private readonly bin = 'kubectl',
  ) {}

  private async run(args: string[], timeoutMs: number): Promise<KubectlOutput> {
    try {
      const r = await this.exec([this.bin, ...args], { env: this.env, timeoutMs, allowFailure: true });
      return { rc: r.code, output: r.code === 0 ? r.stdout : (r.stderr || r.stdout).trim() };
    } catch (err) {
      if ((err as { notFound?: boolean }).notFound) return { rc: KUBECTL_MISSING_RC, output: `${this.bin}: command not found` };
      return { rc: -1, output: (err as Error).message };
    }
  }

  getNodesWide(kubeconfig: string): Promise<KubectlOutput> {
    return this.run(['--kubeconfig', kubeconfig, 'get', 'nodes', '-o', 'wide'], 30_000);
  }

  getPodsAll(kubeconfig: string): Promise<KubectlOutput> {
    return this.run(['--kubeconfig', kubeconfig, 'get', 'pods', '-A'], 30_000);
  }

  async waitNodesReady(kubeconfig: string, timeoutS: number, signal?: AbortSignal): Promise<KubectlOutput> {
    const argv = [this.bin, '--kubeconfig', kubeconfig, 'wait', '--for=condition=Ready', 'nodes', '--all', `--timeout=${timeoutS}s`];
    try {
      const r = await execStreaming(argv, { env: this.env, signal, allowFailure: true, timeoutMs: (timeoutS + 30) * 1000 });
      return { rc: r.code, output: (r.code === 0 ? r.stdout : r.stderr || r.stdout).trim() };
    } catch (err) {
      if (err instanceof ExecAbortedError) throw err;
      if ((err as { notFound?: boolean }).notFound) return { rc: KUBECTL_MISSING_RC, output: `${this.bin}: command not found` };
      return { rc: -1, output: (err as Error).message };
    }
  }
}
