// The bootstrap phases (`@ironlens/clusters/constants`): no imports, so the console's bundle
// takes these values and nothing of the server.

/** The phases a bootstrap goes through, in order; the last three are where it ends. */
export const PHASES = ['queued', 'preflight', 'provisioning', 'running', 'kubeconfig_ready', 'succeeded', 'failed', 'cancelled'] as const;
export type BootstrapPhase = (typeof PHASES)[number];

/** Where a bootstrap ends other than in success. */
export const FAILURE_PHASES = ['failed', 'cancelled'] as const satisfies readonly BootstrapPhase[];
