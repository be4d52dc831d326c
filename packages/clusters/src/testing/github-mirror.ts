import { spawn, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A local stand-in for github.com as `IRONLENS_GITHUB_MIRROR` sees it, on 127.0.0.1:
 * - `/<owner>/<repo>.git/…`: the REAL `git http-backend` (smart HTTP, so shallow clones of a
 *   tag work), run as a CGI per request over bare repositories made by `addRepo`;
 * - `/<owner>/<repo>/releases/download/<tag>/<file>`: answered with a 302 to
 *   `/assets/<n>` on the same server, as GitHub redirects release downloads to its CDN.
 * Throws at start when `git` is missing.
 */
export class LocalGithubMirror {
  readonly root = mkdtempSync(join(tmpdir(), 'ironlens-mirror-'));
  private server?: Server;
  private readonly assets = new Map<string, string>();
  private readonly redirects = new Map<string, string>();
  url = '';
  /** Request paths seen, in order. */
  readonly requests: string[] = [];
  private readonly gitBackend: string;
  /** While true, git requests get no answer (a mirror that hangs). */
  stallGit = false;

  constructor() {
    const execPath = execFileSync('git', ['--exec-path'], { encoding: 'utf8' }).trim();
    this.gitBackend = join(execPath, 'git-http-backend');
  }

  /**
   * Creates a bare repository `<owner>/<repo>.git` with one commit per tag (each holding
   * `files` plus a `VERSION` file with the tag).
   */
  addRepo(ownerRepo: string, tags: string[], files: Record<string, string> = {}): void {
    const work = mkdtempSync(join(tmpdir(), 'ironlens-mirror-work-'));
    const git = (...args: string[]) =>
      execFileSync('git', args, {
        cwd: work,
        env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.invalid', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.invalid' },
        stdio: 'pipe',
      });
    try {
      git('init', '-q', '-b', 'main');
      for (const tag of tags) {
        for (const [f, content] of Object.entries(files)) {
          mkdirSync(join(work, f, '..'), { recursive: true });
          writeFileSync(join(work, f), content);
        }
        writeFileSync(join(work, 'VERSION'), `${tag}\n`);
        git('add', '-A');
        git('commit', '-q', '-m', `release ${tag}`);
        git('tag', tag);
      }
      const bare = join(this.root, `${ownerRepo}.git`);
      mkdirSync(join(bare, '..'), { recursive: true });
      execFileSync('git', ['clone', '-q', '--bare', work, bare], { stdio: 'pipe' });
      execFileSync('git', ['config', 'http.uploadpack', 'true'], { cwd: bare, stdio: 'pipe' });
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }

  /** Serves `content` at `/<owner>/<repo>/releases/download/<tag>/<file>` (through a 302). */
  addReleaseAsset(path: string, content: string): void {
    const id = `/assets/${this.assets.size + 1}`;
    this.assets.set(id, content);
    this.redirects.set(path.startsWith('/') ? path : `/${path}`, id);
  }

  async start(): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(0, '127.0.0.1', () => resolve());
    });
    const a = this.server.address();
    this.url = `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`;
    return this.url;
  }

  async stop(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (s) {
      s.closeAllConnections?.();
      await new Promise<void>((r) => s.close(() => r()));
    }
    rmSync(this.root, { recursive: true, force: true });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://mirror');
    this.requests.push(url.pathname);
    const target = this.redirects.get(url.pathname);
    if (target) {
      res.writeHead(302, { location: target }).end();
      return;
    }
    const asset = this.assets.get(url.pathname);
    if (asset !== undefined) {
      res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(asset);
      return;
    }
    if (/\.git(\/|$)/.test(url.pathname)) {
      if (this.stallGit) return; // the connection stays open, unanswered, until stop()
      return this.cgi(req, res, url);
    }
    res.writeHead(404).end('not found');
  }

  /** `git http-backend` as a CGI: environment in, request body on stdin, CGI headers + body out. */
  private cgi(req: IncomingMessage, res: ServerResponse, url: URL): void {
    const child = spawn(this.gitBackend, [], {
      env: {
        PATH: process.env.PATH,
        GIT_PROJECT_ROOT: this.root,
        GIT_HTTP_EXPORT_ALL: '1',
        PATH_INFO: url.pathname,
        QUERY_STRING: url.search.slice(1),
        REQUEST_METHOD: req.method ?? 'GET',
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        HTTP_CONTENT_ENCODING: String(req.headers['content-encoding'] ?? ''),
        HTTP_GIT_PROTOCOL: String(req.headers['git-protocol'] ?? ''),
        REMOTE_ADDR: '127.0.0.1',
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    req.pipe(child.stdin);
    let head = Buffer.alloc(0);
    let headersDone = false;
    child.stdout.on('data', (chunk: Buffer) => {
      if (headersDone) {
        res.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      const sep = head.indexOf('\r\n\r\n');
      const sepLen = 4;
      const alt = sep < 0 ? head.indexOf('\n\n') : -1;
      const at = sep >= 0 ? sep : alt;
      if (at < 0) return;
      headersDone = true;
      const lines = head.subarray(0, at).toString('latin1').split(/\r?\n/);
      let status = 200;
      const headers: Record<string, string> = {};
      for (const l of lines) {
        const i = l.indexOf(':');
        if (i < 0) continue;
        const k = l.slice(0, i).trim();
        const v = l.slice(i + 1).trim();
        if (k.toLowerCase() === 'status') status = Number.parseInt(v, 10);
        else headers[k] = v;
      }
      res.writeHead(status, headers);
      res.write(head.subarray(at + (sep >= 0 ? sepLen : 2)));
    });
    child.stdout.on('end', () => res.end());
    child.on('error', () => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  }
}
