import { mkdirSync } from 'node:fs';
import { chmod, readdir, readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { resolveInside, writeFileAtomic } from '@ironlens/core';
import { Value } from '@sinclair/typebox/value';
import { ClusterMeta } from '../api/schemas';
import { assertClusterName, isValidClusterName } from '../cluster-name';

export const KUBECONFIG_FILE = 'kubeconfig';
export const META_FILE = 'meta.json';
export const KIND_CONFIG_FILE = 'kind-config.yaml';

/**
 * The clusters directory (`KIND_K8S_CLUSTERS_DIR`): one sub-directory per cluster with its
 * `kubeconfig`, `kind-config.yaml` and `meta.json`. Names are validated before they become paths.
 */
export class ClusterFiles {
  constructor(readonly root: string) {}

  private ensureRoot(): void {
    mkdirSync(this.root, { recursive: true });
  }

  /** The cluster's directory (it may not exist). */
  dir(name: string): string {
    assertClusterName(name);
    this.ensureRoot();
    return resolveInside(this.root, name);
  }

  kubeconfigPath(name: string): string {
    return join(this.dir(name), KUBECONFIG_FILE);
  }

  kindConfigPath(name: string): string {
    return join(this.dir(name), KIND_CONFIG_FILE);
  }

  /** Sub-directories whose names are valid cluster names, sorted. */
  async names(): Promise<string[]> {
    this.ensureRoot();
    const entries = await readdir(this.root, { withFileTypes: true });
    return entries
      .filter((e) => e.isDirectory() && isValidClusterName(e.name))
      .map((e) => e.name)
      .sort();
  }

  async exists(name: string): Promise<boolean> {
    return isDir(this.dir(name));
  }

  async hasKubeconfig(name: string): Promise<boolean> {
    return isFile(this.kubeconfigPath(name));
  }

  /** Creates the directory; true when it did not exist before. */
  async create(name: string): Promise<boolean> {
    const dir = this.dir(name);
    const existed = await isDir(dir);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return !existed;
  }

  /**
   * The cluster's `meta.json`, or null when there is none or it is not a `ClusterMeta` (a known
   * key of the wrong type): the file comes from disk, and is checked like API input before it is shown.
   */
  async readMeta(name: string): Promise<ClusterMeta | null> {
    try {
      const parsed: unknown = JSON.parse(await readFile(join(this.dir(name), META_FILE), 'utf8'));
      return Value.Check(ClusterMeta, parsed) ? (parsed as ClusterMeta) : null;
    } catch {
      return null;
    }
  }

  async writeMeta(name: string, meta: ClusterMeta): Promise<void> {
    await writeFileAtomic(join(this.dir(name), META_FILE), `${JSON.stringify(meta, null, 2)}\n`);
  }

  async writeKindConfig(name: string, text: string): Promise<string> {
    const file = this.kindConfigPath(name);
    await writeFileAtomic(file, text);
    return file;
  }

  async readKubeconfig(name: string): Promise<string | null> {
    try {
      return await readFile(this.kubeconfigPath(name), 'utf8');
    } catch {
      return null;
    }
  }

  /** Kubeconfigs hold the cluster's admin credentials: owner-only. */
  async writeKubeconfig(name: string, text: string): Promise<void> {
    await writeFileAtomic(this.kubeconfigPath(name), text, 0o600);
  }

  async removeKubeconfig(name: string): Promise<void> {
    await rm(this.kubeconfigPath(name), { force: true });
  }

  async protectKubeconfig(name: string): Promise<void> {
    await chmod(this.kubeconfigPath(name), 0o600).catch(() => {});
  }

  async remove(name: string): Promise<void> {
    await rm(this.dir(name), { recursive: true, force: true });
  }
}

async function isDir(p: string): Promise<boolean> {
  try {
    return (await stat(p)).isDirectory();
  } catch {
    return false;
  }
}

async function isFile(p: string): Promise<boolean> {
  try {
    return (await stat(p)).isFile();
  } catch {
    return false;
  }
}
