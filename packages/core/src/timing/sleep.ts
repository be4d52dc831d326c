/** Resolves after `ms` milliseconds: the one `sleep` of ironlens, for production code and (re-exported by core's test helpers) for tests. */
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
