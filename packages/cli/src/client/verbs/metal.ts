/** The provisioning API's commands (seed 004): devices, workers, disks, agents, operations. */
import type { AgentView, Device, DeviceListQuery, OperationsPage, WorkerView } from '@ironlens/metal/api';
import type { VerbContext, VerbHandler, VerbHandlers } from '../context';
import { ClientError, UsageError } from '../errors';
import { type Column, details, table } from '../output';

const DEVICE_COLUMNS: Array<Column<Device>> = [
  ['mac', (r) => r.mac],
  ['state', (r) => r.state],
  ['worker', (r) => r.bound_worker_id],
  ['last seen', (r) => r.last_seen],
];
const WORKER_COLUMNS: Array<Column<WorkerView>> = [
  ['worker', (r) => r.worker_id],
  ['hostname', (r) => r.hostname],
  ['mac', (r) => r.mac],
  ['state', (r) => r.state],
  ['disks', (r) => r.disks.map((d) => d.os)],
];
const DISK_COLUMNS: Array<Column<WorkerView['disks'][number]>> = [
  ['os', (r) => r.os],
  ['iqn', (r) => r.iqn],
  ['agent', (r) => r.agent],
  ['file', (r) => r.filename],
];
const AGENT_COLUMNS: Array<Column<AgentView>> = [
  ['agent', (r) => r.id],
  ['url', (r) => r.base_url],
  ['roles', (r) => (['disk', 'cd'] as const).filter((role) => r.role[role])],
  ['enabled', (r) => r.enabled],
  ['healthy', (r) => r.health],
];
type Entry = OperationsPage['entries'][number];
const OPERATION_COLUMNS: Array<Column<Entry>> = [
  ['id', (x) => x.id],
  ['at', (x) => x.ts],
  ['op', (x) => x.op],
  ['actor', (x) => x.actor],
  ['subject', (x) => x.mac ?? x.worker_id ?? x.agent_id],
];

const STATES: ReadonlyArray<NonNullable<DeviceListQuery['state']>> = ['all', 'pooled', 'bound', 'revoked'];
const POWER_ACTIONS = ['on', 'off', 'cycle', 'soft-off'] as const;

/** One object's answer: `key  value` lines. */
function one(ctx: VerbContext, value: object): number {
  ctx.print(value, () => details(value));
  return 0;
}

export const devices: VerbHandlers<'devices'> = {
  list: {
    options: ['state'],
    async run(ctx) {
      const state = ctx.opts.state as DeviceListQuery['state'];
      if (state !== undefined && !STATES.includes(state)) throw new UsageError(`--state takes ${STATES.join(', ')}`);
      const rows = await ctx.api().devices(state);
      ctx.print(rows, () => table(rows, DEVICE_COLUMNS));
      return 0;
    },
  },
  show: { args: 1, takes: 'a MAC', run: async (ctx) => one(ctx, await ctx.api().device(ctx.args[0])) },
  create: { args: 1, takes: 'a MAC', run: async (ctx) => one(ctx, await ctx.api().createDevice({ mac: ctx.args[0] })) },
  revoke: { args: 1, takes: 'a MAC', run: async (ctx) => one(ctx, await ctx.api().revokeDevice(ctx.args[0])) },
  unbind: { args: 1, takes: 'a MAC', run: async (ctx) => one(ctx, await ctx.api().unbind(ctx.args[0])) },
  bind: {
    args: 2,
    takes: 'a MAC and a worker id',
    switches: ['force'],
    run: async (ctx) => one(ctx, await ctx.api().bind(ctx.args[0], ctx.args[1], ctx.flags.has('force'))),
  },
  power: {
    args: 2,
    takes: 'a MAC and on, off, cycle or soft-off',
    switches: ['network'],
    async run(ctx) {
      const action = POWER_ACTIONS.find((a) => a === ctx.args[1]);
      if (!action) throw new UsageError('the action is on, off, cycle or soft-off');
      one(ctx, await ctx.api().power(ctx.args[0], { action, boot: ctx.flags.has('network') ? 'network' : null }));
      return 0;
    },
  },
};

export const workers: VerbHandlers<'workers'> = {
  list: {
    async run(ctx) {
      const rows = await ctx.api().workers();
      ctx.print(rows, () => table(rows, WORKER_COLUMNS));
      return 0;
    },
  },
  show: { args: 1, takes: 'a worker id', run: async (ctx) => one(ctx, await ctx.api().worker(ctx.args[0])) },
  create: {
    args: 1,
    takes: 'a worker id',
    options: ['mac', 'hostname'],
    run: async (ctx) => one(ctx, await ctx.api().createWorker({ worker_id: ctx.args[0], ...(ctx.opts.mac ? { mac: ctx.opts.mac } : {}), ...(ctx.opts.hostname ? { hostname: ctx.opts.hostname } : {}) })),
  },
  delete: {
    args: 1,
    takes: 'a worker id',
    switches: ['delete-disk'],
    run: async (ctx) => one(ctx, await ctx.api().deleteWorker(ctx.args[0], ctx.flags.has('delete-disk'))),
  },
};

export const disks: VerbHandlers<'disks'> = {
  list: {
    args: 1,
    takes: 'a worker id',
    async run(ctx) {
      const rows = (await ctx.api().worker(ctx.args[0])).disks;
      ctx.print(rows, () => table(rows, DISK_COLUMNS));
      return 0;
    },
  },
  create: {
    args: 1,
    takes: 'a worker id (and --os)',
    options: ['os', 'master', 'size', 'agent'],
    async run(ctx) {
      const { os, master, size, agent } = ctx.opts;
      if (!os) throw new UsageError('--os is needed');
      one(ctx, await ctx.api().createDisk(ctx.args[0], { type: master ? 'master' : 'empty', os, ...(master ? { name: master } : {}), ...(size ? { size } : {}), ...(agent ? { disk_agent: agent } : {}) }));
      return 0;
    },
  },
  delete: {
    args: 2,
    takes: 'a worker id and an os',
    switches: ['delete-file'],
    run: async (ctx) => one(ctx, await ctx.api().deleteDisk(ctx.args[0], ctx.args[1], ctx.flags.has('delete-file'))),
  },
};

export const agents: VerbHandlers<'agents'> = {
  list: {
    async run(ctx) {
      const rows = await ctx.api().agents();
      ctx.print(rows, () => table(rows, AGENT_COLUMNS));
      return 0;
    },
  },
  show: {
    args: 1,
    takes: 'an agent id',
    async run(ctx) {
      // Seed 004 has no GET /agents/{id}: the agent is taken from the list.
      const all = await ctx.api().agents();
      const agent = all.find((a) => a.id === ctx.args[0]);
      if (!agent) throw new ClientError(`no agent ${JSON.stringify(ctx.args[0])}; the agents are: ${all.map((a) => a.id).join(', ') || 'none'}`);
      one(ctx, agent);
      return 0;
    },
  },
};

const list: VerbHandler = {
  options: ['limit', 'mac'],
  async run(ctx) {
    const { limit, mac } = ctx.opts;
    if (limit !== undefined && !/^[1-9][0-9]*$/.test(limit)) throw new UsageError('--limit takes a positive whole number');
    const page = await ctx.api().operations({ ...(limit ? { limit: Number(limit) } : {}), ...(mac ? { mac } : {}) });
    ctx.print(page, () => table(page.entries, OPERATION_COLUMNS));
    return 0;
  },
};
export const operations: VerbHandlers<'operations'> = { list };
