// A replica that owns one job and never finishes it, for the lease tests: they kill it with
// SIGKILL (a replica that dies) and watch another replica fail its job as interrupted.
// argv: <store: file path or postgres:// URL> <lease ms> <heartbeat ms>. Prints `job <id>` once running.
import { Store } from '../../store';
import { JobsRepository, type JobsTables, jobsMigrations } from '../job.repository';
import { JobRunner } from '../job.runner';

const [target, leaseMs, heartbeatMs] = process.argv.slice(2);
const store = await Store.open<JobsTables>(target.startsWith('postgres') ? { url: target, migrations: jobsMigrations } : { file: target, migrations: jobsMigrations });
const runner = new JobRunner(new JobsRepository(store), { shared: true, owner: `hold-job:${process.pid}`, leaseMs: Number(leaseMs), heartbeatMs: Number(heartbeatMs) });
// The runner's timers do not keep a process alive (a server's listener does): this does.
setInterval(() => {}, 1 << 30);
await runner.start({ kind: 'test.lease', subject: 'held', exclusive: true }, async (ctx) => {
  ctx.stage('holding');
  process.stdout.write(`job ${ctx.id}\n`);
  await new Promise(() => {});
  return {};
});
