/** `ironlens rollouts …` (issue 31): a new master across running workers, batch by batch. */
import type { RolloutSummary, RolloutView } from '@ironlens/metal/api';
import type { VerbHandlers } from '../context';
import { UsageError } from '../errors';
import type { Column } from '../output';

const ROLLOUT_COLUMNS: Array<Column<RolloutSummary>> = [
  ['rollout', (r) => r.id],
  ['master', (r) => r.master],
  ['state', (r) => r.state],
  ['done', (r) => `${r.counts.done}/${r.counts.total}`],
  ['rolled back', (r) => r.counts.rolled_back],
  ['max unavailable', (r) => r.max_unavailable],
  ['reason', (r) => r.reason],
];
const WORKER_COLUMNS: Array<Column<RolloutView['workers'][number]>> = [
  ['worker', (w) => w.worker_id],
  ['batch', (w) => w.batch + 1],
  ['phase', (w) => w.phase],
  ['node', (w) => (w.node ? w.node.name : null)],
  ['last step', (w) => {
    const s = w.steps.at(-1);
    return s ? `${s.step} ${s.status}${s.detail ? `: ${s.detail}` : ''}` : null;
  }],
  ['reason', (w) => w.reason],
];

/** A rollout: its state and reason on top, then a row per worker. */
function showRollout(ctx: Parameters<VerbHandlers<'rollouts'>['show']['run']>[0], r: RolloutView): number {
  if (!ctx.json) ctx.out(`${r.id}  ${r.master}  ${r.state}${r.reason ? `: ${r.reason}` : ''}\nbatches of ${r.batch_size} (max unavailable ${r.max_unavailable}), batch ${r.current_batch === null ? '-' : r.current_batch + 1} of ${r.batches.length}\n\n`);
  return ctx.table(r, r.workers, WORKER_COLUMNS);
}

const seconds = (v: string | undefined, name: string): number | undefined => {
  if (v === undefined) return undefined;
  if (!/^[1-9][0-9]{0,5}$/.test(v)) throw new UsageError(`--${name} takes a whole number of seconds`);
  return Number(v);
};

export const rollouts: VerbHandlers<'rollouts'> = {
  list: {
    async run(ctx) {
      const page = await ctx.api().rollouts();
      return ctx.table(page, page.rollouts, ROLLOUT_COLUMNS);
    },
  },
  show: { args: 1, takes: 'a rollout id', run: async (ctx) => showRollout(ctx, await ctx.api().rollout(ctx.args[0])) },
  create: {
    options: ['master', 'max-unavailable', 'workers', 'prefix', 'boot-timeout', 'drain-timeout'],
    async run(ctx) {
      const o = ctx.opts;
      if (!o.master) throw new UsageError('--master is needed (a master image name, as GET /masters lists it)');
      const mu = o['max-unavailable'];
      if (!mu || !/^([1-9][0-9]{0,4}|[1-9][0-9]?%|100%)$/.test(mu)) throw new UsageError('--max-unavailable takes a count (1) or a percent (10%)');
      if (!!o.workers === !!o.prefix) throw new UsageError('give either --workers ID,ID… or --prefix P');
      const workers = o.workers?.split(',').map((w) => w.trim()).filter(Boolean);
      const boot = seconds(o['boot-timeout'], 'boot-timeout');
      const drain = seconds(o['drain-timeout'], 'drain-timeout');
      const r = await ctx.api().createRollout({
        ...(workers ? { workers } : { selector: { prefix: o.prefix } }),
        master: o.master,
        max_unavailable: /%$/.test(mu) ? mu : Number(mu),
        ...(boot ? { boot_timeout_s: boot } : {}),
        ...(drain ? { drain_timeout_s: drain } : {}),
      });
      return showRollout(ctx, r);
    },
  },
  pause: { args: 1, takes: 'a rollout id', run: async (ctx) => showRollout(ctx, await ctx.api().pauseRollout(ctx.args[0])) },
  resume: {
    args: 1,
    takes: 'a rollout id',
    switches: ['no-retry'],
    run: async (ctx) => showRollout(ctx, await ctx.api().resumeRollout(ctx.args[0], { retry_failed: !ctx.flags.has('no-retry') })),
  },
  abort: { args: 1, takes: 'a rollout id', run: async (ctx) => showRollout(ctx, await ctx.api().abortRollout(ctx.args[0])) },
};
