/** The provisioning API's commands (seed 004): devices, workers, disks, agents, operations. */
import type { AgentView, Device, DeviceListQuery, OperationsPage, WorkerView } from '@ironlens/metal/api';
import type { VerbHandler, VerbHandlers } from '../context';
import { ClientError, UsageError } from '../errors';
import type { Column } from '../output';

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

export const devices: VerbHandlers<'devices'> = {
  list: {
    options: ['state'],
    async run(ctx) {
      const state = ctx.opts.state as DeviceListQuery['state'];
      if (state !== undefined && !STATES.includes(state)) throw new UsageError(`--state takes ${STATES.join(', ')}`);
      const rows = await ctx.api().devices(state);
      return ctx.table(rows, rows, DEVICE_COLUMNS);
    },
  },
  show: { args: 1, takes: 'a MAC', run: async (ctx) => ctx.one(await ctx.api().device(ctx.args[0])) },
  create: { args: 1, takes: 'a MAC', run: async (ctx) => ctx.one(await ctx.api().createDevice({ mac: ctx.args[0] })) },
  revoke: { args: 1, takes: 'a MAC', run: async (ctx) => ctx.one(await ctx.api().revokeDevice(ctx.args[0])) },
  unbind: { args: 1, takes: 'a MAC', run: async (ctx) => ctx.one(await ctx.api().unbind(ctx.args[0])) },
  bind: {
    args: 2,
    takes: 'a MAC and a worker id',
    switches: ['force'],
    run: async (ctx) => ctx.one(await ctx.api().bind(ctx.args[0], ctx.args[1], ctx.flags.has('force'))),
  },
  power: {
    args: 2,
    takes: 'a MAC and on, off, cycle or soft-off',
    switches: ['network'],
    async run(ctx) {
      const action = POWER_ACTIONS.find((a) => a === ctx.args[1]);
      if (!action) throw new UsageError('the action is on, off, cycle or soft-off');
      return ctx.one(await ctx.api().power(ctx.args[0], { action, boot: ctx.flags.has('network') ? 'network' : null }));
    },
  },
};

export const workers: VerbHandlers<'workers'> = {
  list: {
    async run(ctx) {
      const rows = await ctx.api().workers();
      return ctx.table(rows, rows, WORKER_COLUMNS);
    },
  },
  show: { args: 1, takes: 'a worker id', run: async (ctx) => ctx.one(await ctx.api().worker(ctx.args[0])) },
  create: {
    args: 1,
    takes: 'a worker id',
    options: ['mac', 'hostname'],
    run: async (ctx) => ctx.one(await ctx.api().createWorker({ worker_id: ctx.args[0], ...(ctx.opts.mac ? { mac: ctx.opts.mac } : {}), ...(ctx.opts.hostname ? { hostname: ctx.opts.hostname } : {}) })),
  },
  delete: {
    args: 1,
    takes: 'a worker id',
    switches: ['delete-disk'],
    run: async (ctx) => ctx.one(await ctx.api().deleteWorker(ctx.args[0], ctx.flags.has('delete-disk'))),
  },
};

export const disks: VerbHandlers<'disks'> = {
  list: {
    args: 1,
    takes: 'a worker id',
    async run(ctx) {
      const rows = (await ctx.api().worker(ctx.args[0])).disks;
      return ctx.table(rows, rows, DISK_COLUMNS);
    },
  },
  create: {
    args: 1,
    takes: 'a worker id (and --os)',
    options: ['os', 'master', 'size', 'agent'],
    async run(ctx) {
      const { os, master, size, agent } = ctx.opts;
      if (!os) throw new UsageError('--os is needed');
      return ctx.one(await ctx.api().createDisk(ctx.args[0], { type: master ? 'master' : 'empty', os, ...(master ? { name: master } : {}), ...(size ? { size } : {}), ...(agent ? { disk_agent: agent } : {}) }));
    },
  },
  delete: {
    args: 2,
    takes: 'a worker id and an os',
    switches: ['delete-file'],
    run: async (ctx) => ctx.one(await ctx.api().deleteDisk(ctx.args[0], ctx.args[1], ctx.flags.has('delete-file'))),
  },
};

export const agents: VerbHandlers<'agents'> = {
  list: {
    async run(ctx) {
      const rows = await ctx.api().agents();
      return ctx.table(rows, rows, AGENT_COLUMNS);
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
      return ctx.one(agent);
    },
  },
};

const list: VerbHandler = {
  options: ['limit', 'mac'],
  async run(ctx) {
    const { limit, mac } = ctx.opts;
    if (limit !== undefined && !/^[1-9][0-9]*$/.test(limit)) throw new UsageError('--limit takes a positive whole number');
    const page = await ctx.api().operations({ ...(limit ? { limit: Number(limit) } : {}), ...(mac ? { mac } : {}) });
    return ctx.table(page, page.entries, OPERATION_COLUMNS);
  },
};
export const operations: VerbHandlers<'operations'> = { list };
