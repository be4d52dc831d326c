import { AppError, type Env, OperationsLog, partOf, TokensRepository } from '@ironlens/core';
import { openStore } from './serve';


type Out = { out: (s: string) => void; err: (s: string) => void };

function option(args: string[], name: string): string | undefined {
  const i = args.findIndex((a) => a === name || a.startsWith(`${name}=`));
  if (i === -1) return undefined;
  const a = args[i];
  if (a.includes('=')) return a.slice(a.indexOf('=') + 1);
  const v = args[i + 1];
  if (v === undefined || v.startsWith('--')) throw new Error(`${name} needs a value`);
  return v;
}

/**
 * `ironlens token …`: resolves to the exit code. `usage` is `COMMAND_USAGE.token` (vocabulary.ts),
 * handed in by main (the bundle keeps main's entry free of static imports of other chunks).
 */
export async function tokenCommand(args: string[], env: Env, io: Out = { out: (s) => process.stdout.write(s), err: (s) => process.stderr.write(s) }, TOKEN_USAGE = 'usage: ironlens token create|list|revoke\n'): Promise<number> {
  const [sub, ...rest] = args;
  if (!sub || sub === '--help' || sub === '-h' || !['create', 'list', 'revoke'].includes(sub)) {
    (sub && sub !== '--help' && sub !== '-h' ? io.err : io.out)(TOKEN_USAGE);
    return sub && sub !== '--help' && sub !== '-h' ? 2 : sub ? 0 : 2;
  }
  const store = await openStore(env);
  try {
    const repo = new TokensRepository(partOf(store));
    const log = new OperationsLog(partOf(store));
    if (sub === 'create') {
      const name = option(rest, '--name');
      const role = option(rest, '--role');
      if (!name || !role) {
        io.err(`ironlens token create: --name and --role are needed\n${TOKEN_USAGE}`);
        return 2;
      }
      const created = await repo.create({ name, role, expires: option(rest, '--expires') });
      await log.append({ op: 'auth.token.create', name: created.name, role: created.role, expires_at: created.expires_at });
      io.out(`${created.token}\n`);
      io.err(`created token ${created.name} (${created.role}${created.expires_at ? `, expires ${created.expires_at}` : ''}); it is shown this once\n`);
      return 0;
    }
    if (sub === 'list') {
      const tokens = await repo.list();
      if (rest.includes('--json')) io.out(`${JSON.stringify(tokens)}\n`);
      else {
        const rows = [['NAME', 'ROLE', 'CREATED', 'EXPIRES', 'LAST USED', 'REVOKED'], ...tokens.map((t) => [t.name, t.role, t.created_at, t.expires_at ?? '-', t.last_used_at ?? '-', t.revoked_at ?? '-'])];
        const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
        for (const r of rows) io.out(`${r.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd()}\n`);
      }
      return 0;
    }
    const name = rest.find((a) => !a.startsWith('-'));
    if (!name) {
      io.err(`ironlens token revoke: a token name is needed\n${TOKEN_USAGE}`);
      return 2;
    }
    if (!(await repo.revoke(name))) throw new AppError('token_not_found', `no token named ${name}`);
    await log.append({ op: 'auth.token.revoke', name });
    io.err(`revoked token ${name}\n`);
    return 0;
  } finally {
    await store.close();
  }
}
