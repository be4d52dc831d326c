import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, openSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { exec } from '@ironlens/core';
import { artifactPath, sleep } from '@ironlens/core/testing';
import { parseTgtadmShow, TgtadmTargets } from '../adapters/tgtadm.adapter';

export { freeTcpPort } from '@ironlens/core/testing';

export interface StartTgtdOptions {
  /** tgtd's control port (`-C`): its socket is /var/run/tgtd/socket.<port>. Must not be in use. */
  controlPort: number;
  /** iSCSI portal `ip:port`, e.g. `127.0.0.1:13260`. Use a port other than 3260. */
  portal: string;
  /** Argv prefix that tgtd runs under, e.g. `['ip','netns','exec','ns1']`. Default is none. */
  wrapper?: string[];
  /** Where tgtd's output goes. Default is a per-run file in `<repo>/.artifacts/`. */
  logFile?: string;
  /** How long to wait for tgtd to answer. Default is 10 s. */
  readyTimeoutMs?: number;
}

export interface RunningTgtd {
  controlPort: number;
  portal: string;
  pid: number;
  logFile: string;
  /** A `TgtadmTargets` bound to this tgtd. */
  targets: TgtadmTargets;
  /** Deletes every target, asks tgtd to exit (`tgtadm --op delete --mode system`), kills it by pid as a last resort. */
  stop(): Promise<void>;
}

const socketFiles = (port: number) => [`/var/run/tgtd/socket.${port}`, `/var/run/tgtd/socket.${port}.lock`];

async function answers(port: number): Promise<boolean> {
  const r = await exec(['tgtadm', '-C', String(port), '--mode', 'system', '--op', 'show'], { allowFailure: true, timeoutMs: 5_000 });
  return r.code === 0;
}

/**
 * Starts a real tgtd for a test, in the foreground of a child process, and waits until
 * tgtadm reaches it. tgtd ignores SIGTERM; `stop()` shuts it down the way tgtd expects.
 */
export async function startTgtd(opts: StartTgtdOptions): Promise<RunningTgtd> {
  const port = opts.controlPort;
  if (await answers(port)) throw new Error(`a tgtd already answers on control port ${port}`);
  // tgtd keeps running without its portal when the port is taken: find out first.
  if (!opts.wrapper?.length) await assertBindable(opts.portal);
  const logFile = opts.logFile ?? artifactPath(`tgtd-${port}`, '.log');
  const out = openSync(logFile, 'w');
  const argv = [...(opts.wrapper ?? []), 'tgtd', '-f', '-C', String(port), '--iscsi', `portal=${opts.portal}`];
  const child: ChildProcess = spawn(argv[0], argv.slice(1), { stdio: ['ignore', out, out] });
  let exited = false;
  const exitedPromise = new Promise<void>((resolve) => {
    child.once('exit', () => {
      exited = true;
      resolve();
    });
    child.once('error', () => {
      exited = true;
      resolve();
    });
  });

  const deadline = Date.now() + (opts.readyTimeoutMs ?? 10_000);
  while (!(await answers(port))) {
    if (exited || Date.now() > deadline) {
      if (!exited) child.kill('SIGKILL');
      await exitedPromise;
      for (const f of socketFiles(port)) rmSync(f, { force: true });
      throw new Error(`tgtd did not come up on control port ${port}: ${readFileSync(logFile, 'utf8').slice(-2000)}`);
    }
    await sleep(50);
  }

  const stop = async () => {
    if (!exited) {
      const show = await exec(['tgtadm', '-C', String(port), '--lld', 'iscsi', '--mode', 'target', '--op', 'show'], { allowFailure: true });
      for (const t of parseTgtadmShow(show.stdout)) {
        await exec(['tgtadm', '-C', String(port), '--lld', 'iscsi', '--mode', 'target', '--op', 'delete', '--force', '--tid', String(t.tid)], {
          allowFailure: true,
        });
      }
      await exec(['tgtadm', '-C', String(port), '--mode', 'system', '--op', 'delete'], { allowFailure: true });
      const gone = await Promise.race([exitedPromise.then(() => true), sleep(5_000).then(() => false)]);
      if (!gone) {
        child.kill('SIGKILL');
        await exitedPromise;
      }
    }
    for (const f of socketFiles(port)) rmSync(f, { force: true });
  };

  return { controlPort: port, portal: opts.portal, pid: child.pid ?? -1, logFile, targets: new TgtadmTargets({ controlPort: port }), stop };
}

function assertBindable(portal: string): Promise<void> {
  const i = portal.lastIndexOf(':');
  const host = portal.slice(0, i).replace(/^\[|\]$/g, '');
  const port = Number(portal.slice(i + 1));
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', (err) => reject(new Error(`iSCSI portal ${portal} cannot be bound: ${(err as NodeJS.ErrnoException).code ?? err.message}`)));
    srv.listen(port, host, () => srv.close(() => resolve()));
  });
}


/** A tgtd control port in 20000–32767 (tgtd refuses more) whose socket does not exist, so no test meets the host's tgtd or another test's. */
export function unusedControlPort(): number {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_768);
    if (!socketFiles(port).some((f) => existsSync(f))) return port;
  }
}
