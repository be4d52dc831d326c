/**
 * The practical ceiling for Node: a bare `node:http` server answering the fleet's iPXE
 * text from an in-memory Map, with the same checks ironlens makes on the hot path
 * (MAC normalised and matched to the hostname). `/devices/report` updates a Map entry
 * and answers `#!ipxe`. Reports `{ port }` over IPC.
 */
import { createServer } from 'node:http';
import { bootScriptOf, hostnameOf, macOf, REPORT_TEXT } from './fleet';

const NO_VARS = '#!ipxe\n# no per-worker boot vars found\n';
const TEXT = { 'content-type': 'text/plain; charset=utf-8' };

const normalizeMac = (s: string | null): string | null => {
  if (!s) return null;
  const hex = s.replace(/[:.-]/g, '').toLowerCase();
  return /^[0-9a-f]{12}$/.test(hex) ? hex.match(/../g)!.join(':') : null;
};

const n = Number(process.env.BENCH_WORKERS ?? 10_000);
const byHostname = new Map<string, { mac: string; text: string }>();
const lastSeen = new Map<string, number>();
for (let i = 1; i <= n; i++) byHostname.set(hostnameOf(i), { mac: macOf(i), text: bootScriptOf(i) });

const server = createServer((req, res) => {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  const params = new URLSearchParams(q === -1 ? '' : url.slice(q + 1));
  if (path === '/boot-vars') {
    const w = byHostname.get((params.get('hostname') ?? '').toLowerCase());
    const mac = normalizeMac(params.get('mac'));
    res.writeHead(200, TEXT);
    res.end(w && (!mac || mac === w.mac) ? w.text : NO_VARS);
  } else if (path === '/devices/report') {
    const mac = normalizeMac(params.get('mac'));
    if (!mac) {
      res.writeHead(400, TEXT);
      res.end('bad mac');
      return;
    }
    lastSeen.set(mac, Date.now());
    res.writeHead(200, TEXT);
    res.end(REPORT_TEXT);
  } else {
    res.writeHead(404, TEXT);
    res.end('not found');
  }
});

server.listen(0, '127.0.0.1', () => {
  const addr = server.address();
  process.send?.({ port: typeof addr === 'object' && addr ? addr.port : 0 });
});
const shutdown = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.on('SIGTERM', shutdown);
process.on('disconnect', () => process.exit(0));
