import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import type { Env } from '@ironlens/core';

/** Answers whether a command is on `PATH` (executable regular file), without running it. */
export type PathLookup = (command: string) => Promise<boolean>;

export function pathLookup(env: Env): PathLookup {
  return async (command) => {
    for (const dir of (env.PATH ?? '').split(delimiter)) {
      if (!dir) continue;
      const file = join(dir, command);
      try {
        await access(file, constants.X_OK);
        if ((await stat(file)).isFile()) return true;
      } catch {
        // not here
      }
    }
    return false;
  };
}

/** True for the error `exec`/`execStreaming` give when the command is not installed. */
export function isNotFound(err: unknown): boolean {
  return Boolean((err as { notFound?: boolean } | null)?.notFound);
}
