import { createContext, useContext } from 'react';
import type { ConsoleToken } from '../shared/token';
import type { AuthApi } from './access';
import type { ClustersApi } from './clusters-api';
import type { MetalApi } from './metal-api';

export interface ConsoleEnv {
  metal: MetalApi;
  /** The console listener's own APIs (cluster manager, bootstrap) at their seed paths. */
  clusters: ClustersApi;
  /** Who the token is, and the token admin API (issue 20). */
  auth: AuthApi;
  token: ConsoleToken;
  kindUrl: string;
  docsUrl: string;
  redocUrl: string;
}

export const ConsoleContext = createContext<ConsoleEnv | null>(null);

export function useConsole(): ConsoleEnv {
  const env = useContext(ConsoleContext);
  if (!env) throw new Error('ConsoleContext missing');
  return env;
}
