import { execStreaming } from '@ironlens/core';

/** Clones a tag of a repository, shallow. */
export interface GitClone {
  clone(url: string, ref: string, dest: string, opts: { signal?: AbortSignal; onLine?: (line: string) => void }): Promise<void>;
}

const REF = /^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$/;

/** True for a tag or branch name that can go on git's command line (no leading dash, no `..`). */
export function isSafeRef(ref: string): boolean {
  return REF.test(ref) && !ref.includes('..') && !ref.endsWith('.lock') && !ref.endsWith('/');
}

/**
 * The system `git`: `git clone --depth 1 --branch <ref> -- <url> <dest>`, an argument array,
 * never a shell. Prompts are off (a mirror asking for credentials fails instead of hanging).
 */
export class GitCli implements GitClone {
  constructor(private readonly env: NodeJS.ProcessEnv = process.env) {}

  async clone(url: string, ref: string, dest: string, opts: { signal?: AbortSignal; onLine?: (line: string) => void }): Promise<void> {
    if (!isSafeRef(ref)) throw new Error(`refusing git ref ${JSON.stringify(ref)}`);
    if (!/^https?:\/\//.test(url)) throw new Error(`refusing git URL ${JSON.stringify(url)}`);
    await execStreaming(['git', '-c', 'advice.detachedHead=false', 'clone', '--quiet', '--depth', '1', '--branch', ref, '--', url, dest], {
      signal: opts.signal,
      onLine: (l) => opts.onLine?.(l),
      env: { ...this.env, GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: '/bin/false' },
      timeoutMs: 30 * 60_000,
    });
  }
}
