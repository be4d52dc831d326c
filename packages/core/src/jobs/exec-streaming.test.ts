import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { processAlive as alive } from '../exec';
import { ExecAbortedError, execStreaming } from './exec-streaming';
import { sleep } from '../timing/sleep';

const dir = mkdtempSync(join(tmpdir(), 'ironlens-stream-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('execStreaming', () => {
  it('delivers output line by line as it is printed, from both streams', async () => {
    const seen: Array<[string, string]> = [];
    // The command prints the rest only once the first line was delivered (it gives up, exit 3, after 10 s).
    const delivered = join(dir, 'first-delivered');
    const script = `
      const fs = require('node:fs');
      process.stderr.write('first\\n');
      const end = Date.now() + 10000;
      const rest = () => fs.existsSync(${JSON.stringify(delivered)}) ? process.stdout.write('second\\r\\nthird') : Date.now() > end ? process.exit(3) : setTimeout(rest, 10);
      rest();`;
    const r = await execStreaming([process.execPath, '-e', script], {
      onLine: (l, s) => {
        seen.push([l, s]);
        if (l === 'first') writeFileSync(delivered, '');
      },
    });
    expect(r.code).toBe(0);
    expect(seen).toEqual([
      ['first', 'stderr'],
      ['second', 'stdout'],
      ['third', 'stdout'],
    ]);
    expect(r.stdout).toBe('second\r\nthird');
  });

  it('kills the whole process group, grandchildren included, when the signal aborts', async () => {
    const pidFile = join(dir, 'grandchild.pid');
    const script = join(dir, 'parent.sh');
    writeFileSync(script, `#!/bin/sh\nsleep 60 &\necho $! > ${pidFile}\necho started\nwait\n`);
    chmodSync(script, 0o755);
    const ac = new AbortController();
    const p = execStreaming([script], {
      signal: ac.signal,
      onLine: (l) => {
        if (l === 'started') ac.abort(new Error('stop now'));
      },
    });
    const err = await p.catch((e) => e);
    expect(err).toBeInstanceOf(ExecAbortedError);
    expect(existsSync(pidFile)).toBe(true);
    const grandchild = Number(readFileSync(pidFile, 'utf8').trim());
    const end = Date.now() + 3000;
    while (alive(grandchild) && Date.now() < end) await sleep(20);
    expect(alive(grandchild)).toBe(false);
  });

  it('rejects with notFound when the command does not exist', async () => {
    const err = await execStreaming(['/nonexistent/ironlens-tool', 'x']).catch((e) => e);
    expect(err.notFound).toBe(true);
    expect(err.result.code).toBe(127);
  });

  it('rejects on a non-zero exit, or resolves with the code when failure is allowed', async () => {
    const argv = [process.execPath, '-e', 'console.error("bad thing"); process.exit(3)'];
    const err = await execStreaming(argv).catch((e) => e);
    expect(err.result.code).toBe(3);
    const ok = await execStreaming(argv, { allowFailure: true });
    expect(ok.code).toBe(3);
    expect(ok.stderr).toContain('bad thing');
  });

  it('refuses to start when the signal is already aborted', async () => {
    const ac = new AbortController();
    ac.abort();
    await expect(execStreaming([process.execPath, '-e', ''], { signal: ac.signal })).rejects.toBeInstanceOf(ExecAbortedError);
  });
});
