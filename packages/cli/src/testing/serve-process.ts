import { type ChildProcess, spawn } from 'node:child_process';
import { sleep, waitFor } from '@ironlens/core/testing';

/** The repository's root, where `./packages/cli/src/serve.ts` is found. */
const REPO = new URL('../../../../', import.meta.url).pathname;

/** `node --import tsx -e …`: the arguments that run `serve(process.env)` from the sources. */
export const SERVE_ARGS = ['--import', 'tsx', '--input-type=module', '-e', "const { serve } = await import('./packages/cli/src/serve.ts'); await serve(process.env);"];

export interface ServeProcess {
  child: ChildProcess;
  /** Everything it wrote so far, stdout and stderr together. */
  output(): string;
  /** Its listeners, as its start lines print them (`''` for one that is off). */
  boot: string;
  console: string;
  /** SIGTERM, then SIGKILL after 5 s; resolves once it exited. */
  stop(): Promise<void>;
}

/** Where a started serve says its listeners are, once it says so. */
export const listenersIn = (out: string) => ({
  boot: out.match(/provisioning API on \S+ \((http:\/\/[^;)]+)/)?.[1] ?? '',
  console: out.match(/console on \S+ \((http:\/\/[^/;)]+)/)?.[1] ?? '',
});

/**
 * `ironlens serve` in a process of its own (the tests that read its output or kill it), with
 * exactly `env` (PATH is the caller's to give); resolves once its last listener printed its
 * address, or throws with what it printed when it exited or took longer than `timeoutMs`.
 */
export async function startServeProcess(env: NodeJS.ProcessEnv, timeoutMs = 30_000): Promise<ServeProcess> {
  const child = spawn(process.execPath, SERVE_ARGS, { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (out += b.toString()));
  const ready = env.IRONLENS_CONSOLE_LISTEN === 'off' ? /provisioning API on / : /console on /;
  await waitFor('ironlens serve to listen', () => out, (o) => ready.test(o) || child.exitCode !== null, timeoutMs);
  const at = listenersIn(out);
  if (child.exitCode !== null || (!at.boot && !at.console)) throw new Error(`ironlens serve did not start:\n${out}`);
  return {
    child,
    output: () => out,
    ...at,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, sleep(5_000)]);
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await exited;
      }
    },
  };
}
