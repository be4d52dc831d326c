import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { requireTool } from './sshd';

const HTTP_BACKEND = '/usr/lib/git-core/git-http-backend';

/**
 * A smart-HTTP git server (`git http-backend` as a CGI per request) over a directory of bare
 * repositories: what GitHub (or a mirror of it) speaks to `git clone`. `stall()` makes it accept
 * requests and never answer, to hold a clone in flight.
 */
export class GitHttpServer {
  requests: string[] = [];
  private stalled = false;
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {
    server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
  }

  static async start(root: string, address = '127.0.0.1'): Promise<GitHttpServer> {
    requireTool(HTTP_BACKEND, 'Debian git');
    let self: GitHttpServer | undefined;
    const server = createServer((req, res) => self!.handle(root, req, res));
    await new Promise<void>((r) => server.listen(0, address, r));
    const port = (server.address() as { port: number }).port;
    self = new GitHttpServer(server, `http://${address}:${port}`);
    return self;
  }

  stall(on: boolean): void {
    this.stalled = on;
  }

  private handle(root: string, req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://x');
    this.requests.push(`${req.method} ${url.pathname}`);
    if (this.stalled) return; // never answered: the client waits until it is killed
    const cgi = spawn(HTTP_BACKEND, [], {
      env: {
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: '1',
        PATH_INFO: decodeURIComponent(url.pathname),
        QUERY_STRING: url.search.replace(/^\?/, ''),
        REQUEST_METHOD: req.method ?? 'GET',
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        HTTP_CONTENT_ENCODING: String(req.headers['content-encoding'] ?? ''),
        GIT_PROTOCOL: String(req.headers['git-protocol'] ?? ''),
        REMOTE_ADDR: req.socket.remoteAddress ?? '',
        PATH: process.env.PATH ?? '/usr/bin:/bin',
      },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    req.pipe(cgi.stdin);
    const chunks: Buffer[] = [];
    cgi.stdout.on('data', (c: Buffer) => chunks.push(c));
    cgi.on('close', () => {
      const out = Buffer.concat(chunks);
      let sep = out.indexOf('\r\n\r\n');
      let sepLen = 4;
      if (sep < 0) {
        sep = out.indexOf('\n\n');
        sepLen = 2;
      }
      const head = out.subarray(0, sep).toString('latin1');
      let status = 200;
      for (const line of head.split(/\r?\n/)) {
        const i = line.indexOf(':');
        if (i < 0) continue;
        const k = line.slice(0, i).trim();
        const v = line.slice(i + 1).trim();
        if (k.toLowerCase() === 'status') status = Number(v.split(' ')[0]);
        else res.setHeader(k, v);
      }
      res.statusCode = status;
      res.end(out.subarray(sep + sepLen));
    });
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((r) => this.server.close(r));
  }
}

/** Makes a bare repository `<root>/<name>.git` from `files`, tagged `tag`. */
export function makeBareRepo(root: string, name: string, work: string, files: Record<string, string | Buffer>, tag: string): void {
  mkdirSync(work, { recursive: true });
  for (const [f, text] of Object.entries(files)) {
    mkdirSync(dirname(join(work, f)), { recursive: true });
    writeFileSync(join(work, f), text);
  }
  const git = (args: string[], cwd = work) =>
    execFileSync('git', ['-c', 'user.name=ironlens-test', '-c', 'user.email=test@ironlens.invalid', '-c', 'init.defaultBranch=master', ...args], { cwd, stdio: 'pipe' });
  git(['init', '-q']);
  git(['add', '-A']);
  git(['commit', '-q', '-m', 'stand-in']);
  git(['tag', tag]);
  mkdirSync(dirname(join(root, `${name}.git`)), { recursive: true });
  git(['clone', '-q', '--bare', work, join(root, `${name}.git`)], root);
}
