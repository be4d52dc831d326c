import type { Env, Exec } from '@ironlens/core';
import type { ContainerCliName } from '../config';

export interface EngineStatus {
  ok: boolean;
  /** Why it is not ok (the engine's own words), or null. */
  detail: string | null;
}

/** The container engine kind drives (docker or podman). */
export interface ContainerEngine {
  readonly name: ContainerCliName;
  /** Runs `<cli> info`: ok when the engine answers. Never rejects. */
  status(): Promise<EngineStatus>;
}

export class ContainerEngineCli implements ContainerEngine {
  constructor(
    private readonly exec: Exec,
    private readonly env: Env,
    readonly name: ContainerCliName,
  ) {}

  async status(): Promise<EngineStatus> {
    try {
      const r = await this.exec([this.name, 'info'], { env: this.env, timeoutMs: 15_000, allowFailure: true });
      if (r.code === 0) return { ok: true, detail: null };
      const text = (r.stderr.trim() || r.stdout.trim() || `${this.name} info exited ${r.code}`).slice(-1000);
      return { ok: false, detail: text };
    } catch (err) {
      if ((err as { notFound?: boolean }).notFound) return { ok: false, detail: `${this.name}: command not found on PATH` };
      return { ok: false, detail: (err as Error).message };
    }
  }
}
