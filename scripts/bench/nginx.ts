/**
 * nginx (Debian's nginx-light) as the static-file reference: its own prefix in a temp
 * dir, `worker_processes 1`, `daemon off`, no access log, listening on 127.0.0.1 only.
 * It serves the iPXE text of one worker at `/boot-vars` and `#!ipxe` at
 * `/devices/report`, whatever the query string.
 */
import type { ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { nginxPrelude } from '@ironlens/cli/testing';
import { waitForListen } from '@ironlens/core/testing';
import { start } from './processes';

export interface Nginx {
  port: number;
  child: ChildProcess;
  errorLog: string;
}

export function nginxConf(prefix: string, port: number): string {
  return `${nginxPrelude(prefix)}
  keepalive_timeout 65s;
  server {
    listen 127.0.0.1:${port};
    default_type "text/plain; charset=utf-8";
    location = /boot-vars { alias ${prefix}/www/boot-vars.ipxe; }
    location = /devices/report { alias ${prefix}/www/report.ipxe; }
  }
}
`;
}

/** `prefix` must exist; it becomes world-readable, since nginx's worker drops to `nobody` when run as root. */
export async function startNginx(prefix: string, port: number, texts: { bootVars: string; report: string }): Promise<Nginx> {
  for (const d of ['www', 'tmp', 'logs']) mkdirSync(join(prefix, d), { recursive: true });
  chmodSync(prefix, 0o755);
  chmodSync(join(prefix, 'www'), 0o755);
  writeFileSync(join(prefix, 'www', 'boot-vars.ipxe'), texts.bootVars, { mode: 0o644 });
  writeFileSync(join(prefix, 'www', 'report.ipxe'), texts.report, { mode: 0o644 });
  const conf = join(prefix, 'nginx.conf');
  writeFileSync(conf, nginxConf(prefix, port));
  const errorLog = join(prefix, 'error.log');
  // -e: the start-up error log too stays in the prefix (never /var/log/nginx).
  const child = start('nginx', ['-p', prefix, '-c', conf, '-e', errorLog]);
  try {
    await waitForListen('nginx', '127.0.0.1', port, { timeoutMs: 10_000, failed: () => (child.exitCode !== null ? `exited with code ${child.exitCode}` : undefined) });
  } catch (err) {
    let log = '';
    try {
      log = readFileSync(errorLog, 'utf8');
    } catch {}
    throw new Error(`${(err as Error).message}\n${log}`);
  }
  return { port, child, errorLog };
}
