/** The cluster manager's commands (seed 000, console listener only): clusters and bootstrap jobs. */
import { type BootstrapPhase, type BootstrapSummary, type ClusterRecord, FAILURE_PHASES, PHASES } from '@ironlens/clusters/api';
import type { VerbContext, VerbHandlers } from '../context';
import { ClientError } from '../errors';
import { type Column, details } from '../output';

/** The phases of a bootstrap that goes well, in order: the progress bar's steps. */
const STEPS = PHASES.filter((p) => !(FAILURE_PHASES as readonly string[]).includes(p));
const ENDS: readonly BootstrapPhase[] = ['succeeded', ...FAILURE_PHASES];

/** How far along a phase is, in percent (a failure phase: `undefined`, it keeps the last step's). */
function percent(phase: BootstrapPhase): number | undefined {
  const i = STEPS.indexOf(phase);
  return i < 0 ? undefined : Math.round((i * 100) / (STEPS.length - 1));
}

const CLUSTER_COLUMNS: Array<Column<ClusterRecord>> = [
  ['id', (x) => x.id],
  ['name', (x) => x.name],
  ['ready', (x) => x.ready],
  ['draft', (x) => x.draft],
  ['created', (x) => x.createdAt],
];
const JOB_COLUMNS: Array<Column<BootstrapSummary>> = [
  ['id', (x) => x.id],
  ['phase', (x) => x.phase],
  ['progress', (x) => (percent(x.phase) === undefined ? undefined : `${percent(x.phase)}%`)],
  ['created', (x) => x.createdAt],
  ['error', (x) => x.error],
];

export const clusters: VerbHandlers<'clusters'> = {
  list: {
    switches: ['drafts'],
    async run(ctx) {
      const list = await ctx.api().clusters(ctx.flags.has('drafts'));
      return ctx.table(list, list.items, CLUSTER_COLUMNS);
    },
  },
  show: {
    args: 1,
    takes: "a cluster's id or name",
    async run(ctx) {
      // The cluster manager has no GET of one cluster: it is taken from the list (drafts too).
      const { items } = await ctx.api().clusters(true);
      const cluster = items.find((c) => c.id === ctx.args[0]) ?? items.find((c) => c.name === ctx.args[0]);
      if (!cluster) throw new ClientError(`no cluster with the id or name ${JSON.stringify(ctx.args[0])}; there are ${items.length}: \`ironlens clusters list --drafts\``);
      return ctx.one(cluster);
    },
  },
};

/** Text that may run over lines (a log, a kubeconfig), under its name, as it is (made printable). */
const block = (name: string, text: string) => `${name}:\n${text.endsWith('\n') ? text : `${text}\n`}`;

export const jobs: VerbHandlers<'jobs'> = {
  list: {
    async run(ctx) {
      const list = await ctx.api().bootstraps();
      return ctx.table(list, list.items, JOB_COLUMNS);
    },
  },
  show: {
    args: 1,
    takes: 'a job id',
    async run(ctx) {
      const job = await ctx.api().bootstrap(ctx.args[0]);
      const { logTail, kubeconfig, ...rest } = job;
      // The kubeconfig comes once (the first read after success): shown whole, never folded onto one line.
      ctx.print(job, () => `${details({ ...rest, progress: percent(job.phase) === undefined ? null : `${percent(job.phase)}%` })}${logTail ? block('log tail', logTail) : ''}${kubeconfig ? block('kubeconfig (answered once: keep it)', kubeconfig) : ''}`);
      return 0;
    },
  },
  watch: { args: 1, takes: 'a job id', run: (ctx) => watch(ctx, ctx.args[0]) },
};

/**
 * Follows a bootstrap job through its phases, one progress line per change, until it ends:
 * exit 0 when it succeeded, 1 when it failed or was cancelled. It reads the job list, not the
 * job: the job's own answer hands out the kubeconfig once, which a watch must not take.
 */
async function watch(ctx: VerbContext, id: string): Promise<number> {
  let last = '';
  let pct = 0;
  for (;;) {
    const job = (await ctx.api().bootstraps()).items.find((j) => j.id === id);
    if (!job) throw new ClientError(`no bootstrap job ${JSON.stringify(id)}: \`ironlens jobs list\``);
    pct = percent(job.phase) ?? pct;
    const line = ctx.json ? JSON.stringify({ id, phase: job.phase, progress: pct, error: job.error }) : `[${'#'.repeat(Math.round(pct / 5)).padEnd(20, '.')}] ${String(pct).padStart(3)}% ${job.phase}`;
    if (line !== last) ctx.out(`${line}\n`);
    last = line;
    if (ENDS.includes(job.phase)) {
      if (job.error && !ctx.json) ctx.err(`ironlens jobs: ${id} ${job.phase}: ${job.error}\n`);
      if (job.phase === 'succeeded' && !job.kubeconfigDelivered && !job.clusterId && !ctx.json) ctx.out(`the kubeconfig is answered once: \`ironlens jobs show ${id}\`\n`);
      return job.phase === 'succeeded' ? 0 : 1;
    }
    // Not core's `sleep`: the client loads nothing of the server packages (a fast start).
    await new Promise((r) => setTimeout(r, ctx.io.pollMs ?? 1000));
  }
}
