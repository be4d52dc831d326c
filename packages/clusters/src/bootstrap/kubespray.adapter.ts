import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Env, execStreaming } from '@ironlens/core';
import { sshArgs } from './inventory';

/** The Kubespray release ironlens bootstraps with. */
export const KUBESPRAY_VERSION = 'v2.31.0';

export type LineSink = (line: string) => void;

export interface KubesprayCheckout {
  /** The cloned repository (the playbook's working directory, so its `ansible.cfg` applies). */
  repoDir: string;
  /** `ansible-playbook` of the version's virtualenv when it has one, else the one on PATH. */
  ansiblePlaybook: string;
  /** PATH for the playbook: the virtualenv's `bin` first. */
  path: string;
}

/** What the bootstrap needs from Kubespray: a checkout with its Python requirements, and a run of `cluster.yml`. */
export interface Kubespray {
  prepare(opts: { signal: AbortSignal; onLine: LineSink }): Promise<KubesprayCheckout>;
  runCluster(opts: { checkout: KubesprayCheckout; jobDir: string; knownHosts: string; signal: AbortSignal; onLine: LineSink }): Promise<number>;
  /** Kills processes a previous ironlens left running for a job directory (after a crash). */
  killLeftovers(jobDir: string): void;
}

export interface KubesprayCliOptions {
  /** `<dataDir>/bootstrap`: holds `kubespray/<version>`, `venv/<version>`. */
  root: string;
  /** `<IRONLENS_GITHUB_MIRROR>`: the repository is `<mirror>/kubernetes-sigs/kubespray.git`. */
  githubMirror: string;
  /** The environment for git, python and ansible (proxy settings, PATH). */
  env: Env;
  version?: string;
  /** Python that makes the virtualenv. Default is `python3`. */
  python?: string;
}

const READY = '.ironlens-ready';

/**
 * Kubespray through its own tools, argument arrays only, each command in a process group of its
 * own (cancel kills git, pip and ansible-playbook with everything they started). Checkouts and
 * virtualenvs are cached per version; one preparation runs at a time in this process.
 */
export class KubesprayCli implements Kubespray {
  private readonly version: string;
  private preparing: Promise<unknown> = Promise.resolve();

  constructor(private readonly opts: KubesprayCliOptions) {
    this.version = opts.version ?? KUBESPRAY_VERSION;
    if (!/^v\d+\.\d+\.\d+$/.test(this.version)) throw new Error(`invalid Kubespray version ${this.version}`);
  }

  get repoUrl(): string {
    return `${this.opts.githubMirror}/kubernetes-sigs/kubespray.git`;
  }

  private baseEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(this.opts.env)) if (v !== undefined && !k.startsWith('ANSIBLE_')) env[k] = v;
    return { ...env, GIT_TERMINAL_PROMPT: '0', PYTHONUNBUFFERED: '1', ...extra };
  }

  prepare(opts: { signal: AbortSignal; onLine: LineSink }): Promise<KubesprayCheckout> {
    const run = this.preparing.then(() => this.prepareNow(opts));
    this.preparing = run.catch(() => {});
    return run;
  }

  private async prepareNow({ signal, onLine }: { signal: AbortSignal; onLine: LineSink }): Promise<KubesprayCheckout> {
    const repoDir = join(this.opts.root, 'kubespray', this.version);
    const venv = join(this.opts.root, 'venv', this.version);
    const sink = (line: string) => onLine(line);
    if (!existsSync(join(repoDir, READY))) {
      rmSync(repoDir, { recursive: true, force: true });
      mkdirSync(join(this.opts.root, 'kubespray'), { recursive: true });
      const tmp = `${repoDir}.${randomBytes(4).toString('hex')}.tmp`;
      onLine(`cloning Kubespray ${this.version} from ${this.repoUrl}`);
      try {
        await execStreaming(['git', 'clone', '--quiet', '--depth', '1', '--branch', this.version, '-c', 'advice.detachedHead=false', '--', this.repoUrl, tmp], {
          signal,
          env: this.baseEnv(),
          onLine: sink,
        });
        writeFileSync(join(tmp, READY), `${this.version}\n`);
        renameSync(tmp, repoDir);
      } finally {
        rmSync(tmp, { recursive: true, force: true });
      }
    }
    const reqFile = join(repoDir, 'requirements.txt');
    const requirements = existsSync(reqFile) ? readFileSync(reqFile, 'utf8') : '';
    const stamp = createHash('sha256').update(requirements).digest('hex');
    const ready = join(venv, READY);
    if (!existsSync(ready) || readFileSync(ready, 'utf8').trim() !== stamp) {
      rmSync(venv, { recursive: true, force: true });
      mkdirSync(join(this.opts.root, 'venv'), { recursive: true });
      onLine(`creating the virtualenv for Kubespray ${this.version}`);
      const wanted = requirements.split('\n').some((l) => l.trim() !== '' && !l.trim().startsWith('#'));
      // pip goes into the virtualenv only when there is something to install with it.
      const venvArgs = ['-m', 'venv', '--system-site-packages', ...(wanted ? [] : ['--without-pip']), venv];
      await execStreaming([this.opts.python ?? 'python3', ...venvArgs], { signal, env: this.baseEnv(), onLine: sink });
      if (wanted) {
        onLine('installing Kubespray requirements (pip install -r requirements.txt)');
        await execStreaming([join(venv, 'bin', 'python'), '-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '-r', reqFile], {
          signal,
          env: this.baseEnv(),
          cwd: repoDir,
          onLine: sink,
        });
      }
      writeFileSync(ready, `${stamp}\n`);
    }
    const venvPlaybook = join(venv, 'bin', 'ansible-playbook');
    const path = [join(venv, 'bin'), this.opts.env.PATH ?? '/usr/local/bin:/usr/bin:/bin'].join(':');
    return { repoDir, ansiblePlaybook: existsSync(venvPlaybook) ? venvPlaybook : 'ansible-playbook', path };
  }

  async runCluster(opts: { checkout: KubesprayCheckout; jobDir: string; knownHosts: string; signal: AbortSignal; onLine: LineSink }): Promise<number> {
    const { checkout, jobDir } = opts;
    const home = join(jobDir, 'home');
    mkdirSync(join(home, 'tmp'), { recursive: true, mode: 0o700 });
    const env = this.baseEnv({
      PATH: checkout.path,
      HOME: home,
      ANSIBLE_LOCAL_TEMP: join(home, 'tmp'),
      // Environment settings beat Kubespray's ansible.cfg; the ssh arguments come first on the
      // ssh command line, and ssh keeps the first value of each option.
      ANSIBLE_HOST_KEY_CHECKING: 'True',
      ANSIBLE_SSH_ARGS: sshArgs(opts.knownHosts),
      ANSIBLE_NOCOLOR: '1',
      ANSIBLE_FORCE_COLOR: '0',
      ANSIBLE_RETRY_FILES_ENABLED: 'False',
    });
    const argv = [checkout.ansiblePlaybook, '-i', join(jobDir, 'inventory.yml'), '-b', 'cluster.yml'];
    opts.onLine(`running ${argv.map((a, i) => (i === 0 ? 'ansible-playbook' : a === join(jobDir, 'inventory.yml') ? 'inventory.yml' : a)).join(' ')}`);
    const r = await execStreaming(argv, { signal: opts.signal, env, cwd: checkout.repoDir, onLine: opts.onLine, allowFailure: true });
    return r.code;
  }

  killLeftovers(jobDir: string): void {
    const marker = join(jobDir, 'inventory.yml');
    let pids: string[];
    try {
      pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p));
    } catch {
      return;
    }
    const groups = new Set<number>();
    for (const pid of pids) {
      try {
        const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
        const inJob = cmd.includes(marker) || readlinkSync(`/proc/${pid}/cwd`).startsWith(jobDir);
        if (!inJob) continue;
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        const pgid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
        if (pgid > 1 && pgid !== process.pid) groups.add(pgid);
      } catch {
        // gone, or not ours to read
      }
    }
    for (const g of groups) {
      try {
        process.kill(-g, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
}
