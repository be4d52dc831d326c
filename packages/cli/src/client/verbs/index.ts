/**
 * Every client command's verb handlers, by command: the compiler holds this table to the
 * vocabulary (`../../vocabulary.ts`), so a verb there without a handler here fails `npm run check`.
 * A new command's verbs: its entry in `CLIENT` (verbs and usage), a module here with its
 * `VerbHandlers<'name'>`, its line below, and its calls in `../api.ts`.
 */
import type { ClientCommand } from '../../vocabulary';
import type { VerbHandlers } from '../context';
import { clusters, jobs } from './clusters';
import { agents, devices, disks, operations, workers } from './metal';
import { rollouts } from './rollouts';
import { completion, login, logout } from './session';

export const HANDLERS: { readonly [C in ClientCommand]: VerbHandlers<C> } = {
  devices,
  workers,
  disks,
  agents,
  clusters,
  jobs,
  operations,
  rollouts,
  login,
  logout,
  completion,
};
