import { createConnection, type Socket } from 'node:net';
import { createServer, type Server } from 'node:http';

/**
 * A real HTTP CONNECT proxy on 127.0.0.1 that counts the tunnels it opens. It forwards only
 * to loopback targets (anything else gets 403), so a test cannot reach beyond the machine.
 */
export class CountingConnectProxy {
  private server?: Server;
  private readonly sockets = new Set<Socket>();
  /** `host:port` of every CONNECT, in order. */
  readonly connects: string[] = [];
  url = '';

  async start(): Promise<string> {
    this.server = createServer((_req, res) => res.writeHead(405).end());
    this.server.on('connect', (req, client: Socket, head: Buffer) => {
      const target = req.url ?? '';
      this.connects.push(target);
      this.sockets.add(client);
      client.on('close', () => this.sockets.delete(client));
      client.on('error', () => client.destroy());
      const m = /^(127\.\d+\.\d+\.\d+|localhost):(\d+)$/.exec(target);
      if (!m) {
        client.end('HTTP/1.1 403 Forbidden\r\n\r\n');
        return;
      }
      const upstream = createConnection({ host: m[1], port: Number(m[2]) }, () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        if (head.length) upstream.write(head);
        upstream.pipe(client);
        client.pipe(upstream);
      });
      this.sockets.add(upstream);
      upstream.on('close', () => this.sockets.delete(upstream));
      upstream.on('error', () => client.destroy());
      client.on('close', () => upstream.destroy());
    });
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(0, '127.0.0.1', () => resolve());
    });
    const a = this.server.address();
    this.url = `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`;
    return this.url;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    const srv = this.server;
    this.server = undefined;
    if (srv) {
      srv.closeAllConnections?.();
      await new Promise<void>((r) => srv.close(() => r()));
    }
  }
}
