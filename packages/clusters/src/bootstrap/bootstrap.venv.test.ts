import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jobsMigrations, Store } from '@ironlens/core';
import { sleep, testStoreTarget } from '@ironlens/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BootstrapDatabase, bootstrapMigrations, createBootstrapServices, KUBESPRAY_VERSION } from './index';
import { GitHttpServer, makeBareRepo } from './testing/git-server';
import { standInControl } from './testing/harness';
import { kubesprayStandInFiles } from './testing/kubespray-standin';
import { newKey, randomLoopbackPrefix, requireTool, TestSshd } from './testing/sshd';
import { buildAnsibleWrapperWheel } from './testing/wheel';

// Kubespray's requirements go into a virtualenv per version, whose ansible-playbook wins over
// the one on PATH. Here the stand-in's requirements.txt names a wheel kept in the repository
// (nothing is downloaded); it installs an ansible-playbook that announces itself, then hands
// over to Debian's.
const dir = mkdtempSync(join(tmpdir(), 'ironlens-bootstrap-venv-'));
const MARKER = 'ansible-playbook from the Kubespray virtualenv';
const KUBECONFIG = 'apiVersion: v1\nkind: Config\nclusters: []\n';
let sshd: TestSshd;
let git: GitHttpServer;

beforeAll(async () => {
  requireTool('/usr/bin/ansible-playbook', 'Debian ansible-core');
  const clientKey = newKey(join(dir, 'client'));
  writeFileSync(join(dir, 'authorized_keys'), readFileSync(`${clientKey}.pub`));
  sshd = await TestSshd.start({ dir: join(dir, 'sshd'), address: `${randomLoopbackPrefix()}2`, hostKey: newKey(join(dir, 'host')), authorizedKeys: join(dir, 'authorized_keys') });
  const wheel = join(dir, 'standin_ansible-0.1-py3-none-any.whl');
  buildAnsibleWrapperWheel(wheel, MARKER);
  makeBareRepo(
    join(dir, 'git'),
    'kubernetes-sigs/kubespray',
    join(dir, 'work'),
    {
      ...kubesprayStandInFiles(standInControl(join(dir, 'control'), KUBECONFIG)),
      'requirements.txt': './wheels/standin_ansible-0.1-py3-none-any.whl\n',
      'wheels/standin_ansible-0.1-py3-none-any.whl': readFileSync(wheel),
    },
    KUBESPRAY_VERSION,
  );
  git = await GitHttpServer.start(join(dir, 'git'));
}, 60_000);

afterAll(async () => {
  await git?.stop();
  await sshd?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('the Kubespray virtualenv', () => {
  it("installs requirements.txt with pip and runs the virtualenv's ansible-playbook", async () => {
    const store = await Store.open<BootstrapDatabase>({ ...(await testStoreTarget(':memory:')), migrations: [...jobsMigrations, ...bootstrapMigrations] });
    const dataDir = join(dir, 'data');
    const runtime = await createBootstrapServices({ store, env: { ...process.env, IRONLENS_GITHUB_MIRROR: git.url }, dataDir });
    try {
      const { bootstrap } = runtime.services;
      const { bootstrapId } = await bootstrap.start({
        nodes: [{ host: sshd.address, port: sshd.port, roles: ['control-plane', 'worker'], privateKey: readFileSync(join(dir, 'client'), 'utf8') }],
        hostKeys: [{ host: sshd.address, port: sshd.port, fingerprint: sshd.fingerprint }],
      });
      const end = Date.now() + 150_000;
      let s = await bootstrap.status(bootstrapId);
      while (!['succeeded', 'failed', 'cancelled'].includes(s.phase) && Date.now() < end) {
        await sleep(250);
        s = await bootstrap.status(bootstrapId);
      }
      expect(s.phase, `${s.error}\n${s.logTail}`).toBe('succeeded');
      expect(s.kubeconfig).toBe(KUBECONFIG);
      expect(s.logTail).toContain('installing Kubespray requirements (pip install -r requirements.txt)');
      expect(s.logTail).toContain(MARKER);
      expect(readFileSync(join(dataDir, 'bootstrap', 'venv', KUBESPRAY_VERSION, 'pyvenv.cfg'), 'utf8')).toContain('include-system-site-packages = true');
    } finally {
      await runtime.close();
      await store.close();
    }
  }, 180_000);
});
