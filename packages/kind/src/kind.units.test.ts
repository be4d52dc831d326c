import { describe, expect, it } from 'vitest';
import { stableTags } from './adapters/node-tags.adapter';
import { isValidClusterName, versionTag } from './cluster-name';
import { DEFAULT_TAGS_URL, readKindConfig } from './config';
import { kindStageOf, renderKindConfig } from './services/create-cluster.job';
import { patchKubeconfigForHost } from './services/kubeconfig-patch';

describe('kind output parsing', () => {
  it.each([
    [' • Ensuring node image (kindest/node:v1.31.0) 🖼  ...', { stage: 'Ensuring node image (kindest/node:v1.31.0)', percent: 15, done: false, failed: false }],
    [' ✓ Ensuring node image (kindest/node:v1.31.0) 🖼', { stage: 'Ensuring node image (kindest/node:v1.31.0)', percent: 15, done: true, failed: false }],
    [' ✓ Preparing nodes 📦 📦 📦', { stage: 'Preparing nodes', percent: 25, done: true, failed: false }],
    [' ✓ Starting control-plane 🕹️', { stage: 'Starting control-plane', percent: 45, done: true, failed: false }],
    [' ✗ Starting control-plane 🕹️', { stage: 'Starting control-plane', percent: 45, done: false, failed: true }],
    [' ✓ Joining worker nodes 🚜 ', { stage: 'Joining worker nodes', percent: 65, done: true, failed: false }],
  ])('reads %j as a stage', (line, want) => {
    expect(kindStageOf(line)).toEqual(want);
  });

  it.each(['Creating cluster "dev" ...', 'Set kubectl context to "kind-dev"', 'ERROR: failed to create cluster: boom', '', ' • Something kind has never printed  ...'])('ignores %j', (line) => {
    expect(kindStageOf(line)).toBeNull();
  });
});

describe('kind config', () => {
  it('writes one control-plane and the workers, each with the node image', () => {
    expect(renderKindConfig({ workers: 1, nodeImage: 'kindest/node:v1.30.4' })).toBe(
      '# Written by ironlens (kind panel).\nkind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes:\n  - role: control-plane\n    image: kindest/node:v1.30.4\n  - role: worker\n    image: kindest/node:v1.30.4\n',
    );
  });

  it('leaves the image out for kind’s default', () => {
    expect(renderKindConfig({ workers: 0, nodeImage: null })).toBe('# Written by ironlens (kind panel).\nkind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes:\n  - role: control-plane\n');
  });
});

describe('cluster names and versions', () => {
  it.each(['dev', 'a', 'my-cluster.1', '0abc', 'a'.repeat(50)])('accepts %j', (n) => expect(isValidClusterName(n)).toBe(true));
  it.each(['', 'Dev', '-dev', '.', '..', '.hidden', 'a_b', 'a/b', 'a b', 'dév', 'a'.repeat(51), 'x;rm -rf /'])('refuses %j', (n) => expect(isValidClusterName(n)).toBe(false));

  it('normalises 1.29.4 and v1.29.4 to the tag v1.29.4, refusing anything else', () => {
    expect(versionTag('1.29.4')).toBe('v1.29.4');
    expect(versionTag(' v1.29.4 ')).toBe('v1.29.4');
    for (const bad of ['latest', '1.29', 'v1.29.4-rc.1', '1.29.4\nimage: evil']) expect(() => versionTag(bad)).toThrow(expect.objectContaining({ code: 'kind_version_invalid', status: 400 }));
  });
});

describe('stable tags', () => {
  it('keeps vX.Y.Z only, newest first, by numeric version', () => {
    expect(stableTags(['v1.9.0', 'v1.10.0', 'latest', 'v1.10.0', 'v1.31.0-rc.1', 'v1.2.10', 'v1.2.9', 'sha256-abc.sig'])).toEqual(['v1.10.0', 'v1.9.0', 'v1.2.10', 'v1.2.9']);
  });
});

describe('kubeconfig patch', () => {
  const kc = (server: string) => `apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: AAAA\n    server: ${server}\n  name: kind-dev\ncurrent-context: kind-dev\nkind: Config\n`;

  it('rewrites 0.0.0.0 and localhost to 127.0.0.1 and keeps the rest', () => {
    for (const s of ['https://0.0.0.0:6443', 'https://localhost:6443']) {
      const out = patchKubeconfigForHost(kc(s));
      expect(out.servers).toEqual(['https://127.0.0.1:6443']);
      expect(out.text).toContain('certificate-authority-data: AAAA');
      expect(out.text).toContain('current-context: kind-dev');
    }
  });

  it('leaves 127.0.0.1 as it is when no other host is configured', () => {
    expect(patchKubeconfigForHost(kc('https://127.0.0.1:35501')).servers).toEqual(['https://127.0.0.1:35501']);
  });

  it('uses the configured host with tls-server-name localhost', () => {
    const out = patchKubeconfigForHost(kc('https://127.0.0.1:35501'), 'host.docker.internal');
    expect(out.servers).toEqual(['https://host.docker.internal:35501']);
    expect(out.text).toContain('tls-server-name: localhost');
  });

  it('refuses a file with no cluster', () => {
    expect(() => patchKubeconfigForHost('apiVersion: v1\nkind: Config\n')).toThrow(/no clusters/);
    expect(() => patchKubeconfigForHost('clusters: [')).toThrow(/not valid YAML/);
  });
});

describe('configuration', () => {
  it('states its defaults', () => {
    const c = readKindConfig({}, '/srv');
    expect(c).toMatchObject({ host: '127.0.0.1', port: 8080, containerCli: 'docker', skipVersionList: false, clustersDir: '/srv/clusters', tagsUrl: DEFAULT_TAGS_URL, dbFile: '/srv/.data/kind.sqlite', apiServerHost: undefined, nodesReadyTimeoutS: 180 });
    expect(DEFAULT_TAGS_URL).toBe('https://hub.docker.com/v2/repositories/kindest/node/tags?page_size=100');
  });

  it('reads every variable', () => {
    const c = readKindConfig({ KIND_K8S_WEB_PORT: '9090', CONTAINER_CLI: 'Podman', KIND_K8S_SKIP_VERSION_LIST: '1', KIND_K8S_CLUSTERS_DIR: '/data/clusters', KIND_K8S_TAGS_URL: 'http://127.0.0.1:1/tags' }, '/srv');
    expect(c).toMatchObject({ port: 9090, containerCli: 'podman', skipVersionList: true, clustersDir: '/data/clusters', tagsUrl: 'http://127.0.0.1:1/tags' });
  });

  it('refuses an unknown container CLI and a bad port', () => {
    expect(() => readKindConfig({ CONTAINER_CLI: 'nerdctl' })).toThrow(/CONTAINER_CLI/);
    expect(() => readKindConfig({ KIND_K8S_WEB_PORT: '70000' })).toThrow(/KIND_K8S_WEB_PORT/);
    expect(() => readKindConfig({ KIND_K8S_SKIP_VERSION_LIST: 'maybe' })).toThrow(/KIND_K8S_SKIP_VERSION_LIST/);
  });
});
