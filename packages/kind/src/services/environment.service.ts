import type { HealthView, VersionsView } from '../api/schemas';
import type { ContainerEngine } from '../adapters/container-engine.adapter';
import { type NodeImageTags, stableTags } from '../adapters/node-tags.adapter';
import type { PathLookup } from '../adapters/path-lookup';

export interface EnvironmentServiceOptions {
  skipVersionList: boolean;
  /** How long a successful tag list is reused. Default is `600000` ms. */
  tagsCacheMs?: number;
}

/** The environment card: tools on PATH, the container engine, the node image versions. */
export class EnvironmentService {
  private cache?: { at: number; tags: string[] };

  constructor(
    private readonly onPath: PathLookup,
    private readonly engine: ContainerEngine,
    private readonly tags: NodeImageTags,
    private readonly opts: EnvironmentServiceOptions,
  ) {}

  async health(): Promise<HealthView> {
    const [kindOk, kubectlOk, engine] = await Promise.all([this.onPath('kind'), this.onPath('kubectl'), this.engine.status()]);
    return {
      status: kindOk && kubectlOk && engine.ok ? 'ok' : 'degraded',
      kind_in_path: kindOk,
      kubectl_in_path: kubectlOk,
      container_cli: this.engine.name,
      container_engine_ok: engine.ok,
      container_engine_detail: engine.detail,
    };
  }

  async versions(): Promise<VersionsView> {
    if (this.opts.skipVersionList) return { tags: [], skipped: true, reason: 'KIND_K8S_SKIP_VERSION_LIST' };
    const ttl = this.opts.tagsCacheMs ?? 600_000;
    if (this.cache && Date.now() - this.cache.at < ttl) return { tags: this.cache.tags, skipped: false };
    try {
      const tags = stableTags(await this.tags.list());
      this.cache = { at: Date.now(), tags };
      return { tags, skipped: false };
    } catch (err) {
      return { tags: [], skipped: false, error: `could not read kindest/node tags: ${(err as Error).message}` };
    }
  }
}
