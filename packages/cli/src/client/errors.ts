/** A command line the command cannot run: exit 2, with the command's usage. */
export class UsageError extends Error {}

/**
 * The command cannot be done for a reason found on this side (a saved login it cannot read, an
 * answer its schema does not allow, a verb the listener does not serve): exit 1, its message says
 * what and what to do.
 */
export class ClientError extends Error {}
