/**
 * FakeKonnectivityServer: a STAND-IN for the konnectivity server's HTTP CONNECT
 * front end, i.e. the API server's "cluster" egress (`--egress-selector-config-file`,
 * EgressSelectorConfiguration apiserver.k8s.io/v1beta1, proxyProtocol HTTPConnect
 * over a Unix domain socket).
 *
 * Why it exists: kube-apiserver refuses to proxy to a node whose address is not a
 * global unicast IP (pkg/registry/core/node/strategy.go, isProxyableHostname:
 * `!host.IP.IsGlobalUnicast()` -> 400 "address not allowed"), so a fake node on
 * 127.x cannot be reached through `/api/v1/nodes/{name}/proxy/...`. The harness
 * gives fake nodes addresses from 198.18.0.0/15 (RFC 2544, benchmarking) and the
 * API server reaches "them" the way it reaches kubelets in clusters that run
 * Konnectivity: it writes `CONNECT 198.18.0.2:10250 HTTP/1.1` on this Unix socket,
 * and this stand-in splices the stream to the matching loopback listener. It only
 * forwards to routes registered by the harness and never dials any other address,
 * so no packet leaves loopback — except, when a test asks for it (`routeNetwork`), the
 * addresses of one pod network CIDR, which that test routes into a network namespace of its
 * own (pods' model servers listen there; the namespace has no route anywhere else).
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { rm } from 'node:fs/promises';

export interface Route {
  host: string;
  port: number;
}

/** `10.244.0.0/16` → a matcher of IPv4 addresses inside it. */
function ipv4Cidr(cidr: string): (ip: string) => boolean {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(cidr);
  if (!m || Number(m[5]) < 8 || Number(m[5]) > 32 || m.slice(1, 5).some((o) => Number(o) > 255)) throw new Error(`not an IPv4 CIDR (/8 to /32): ${cidr}`);
  const num = (a: string[]) => a.reduce((n, o) => n * 256 + Number(o), 0);
  const block = 2 ** (32 - Number(m[5]));
  const network = (n: number) => n - (n % block);
  const base = network(num(m.slice(1, 5)));
  return (ip: string) => {
    const p = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(ip);
    if (!p || p.slice(1, 5).some((o) => Number(o) > 255)) return false;
    return network(num(p.slice(1, 5))) === base;
  };
}

export class FakeKonnectivityServer {
  private server?: Server;
  private readonly routes = new Map<string, Route>();
  private network: ((ip: string) => boolean) | null = null;
  private readonly sockets = new Set<Socket>();
  /** CONNECT targets seen, in order (e.g. "198.18.0.2:10250"). */
  readonly connects: string[] = [];

  constructor(readonly socketPath: string) {}

  /** Routes CONNECTs for `target` ("ip:port") to a loopback listener. */
  route(target: string, to: Route): void {
    if (!/^127\./.test(to.host)) throw new Error(`FakeKonnectivityServer forwards to loopback only, not ${to.host}`);
    this.routes.set(target, to);
  }

  /**
   * CONNECTs to any port of an address in `cidr` (the pod network the test routes into a network
   * namespace of its own) are dialled as they are. Only this one CIDR; registered routes win.
   */
  routeNetwork(cidr: string): void {
    this.network = ipv4Cidr(cidr);
  }

  async listen(): Promise<void> {
    await rm(this.socketPath, { force: true });
    this.server = createServer((c) => this.onConnection(c));
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(this.socketPath, () => resolve());
    });
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    const srv = this.server;
    this.server = undefined;
    if (srv) await new Promise<void>((r) => srv.close(() => r()));
    await rm(this.socketPath, { force: true });
  }

  private onConnection(client: Socket): void {
    this.sockets.add(client);
    client.on('close', () => this.sockets.delete(client));
    client.on('error', () => client.destroy());
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) {
        if (head.length > 16 * 1024) client.destroy();
        return;
      }
      client.off('data', onData);
      const rest = head.subarray(end + 4);
      const m = /^CONNECT (\S+) HTTP\/1\.[01]\r\n/.exec(head.subarray(0, end + 2).toString('latin1'));
      if (!m) {
        client.end('HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n');
        return;
      }
      const target = m[1];
      this.connects.push(target);
      const hostPort = /^(\d{1,3}(?:\.\d{1,3}){3}):(\d{1,5})$/.exec(target);
      const to = this.routes.get(target) ?? (hostPort && this.network?.(hostPort[1]) && Number(hostPort[2]) <= 65535 ? { host: hostPort[1], port: Number(hostPort[2]) } : undefined);
      if (!to) {
        client.end('HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n');
        return;
      }
      const upstream = createConnection({ host: to.host, port: to.port });
      let connected = false;
      this.sockets.add(upstream);
      upstream.on('close', () => this.sockets.delete(upstream));
      upstream.once('connect', () => {
        connected = true;
        client.write('HTTP/1.1 200 Connection established\r\n\r\n');
        if (rest.length) upstream.write(rest);
        client.pipe(upstream);
        upstream.pipe(client);
      });
      upstream.on('error', () => {
        if (!connected && !client.destroyed) client.end('HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n');
        client.destroy();
      });
      client.on('close', () => upstream.destroy());
    };
    client.on('data', onData);
  }
}
