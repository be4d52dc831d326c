// `@ironlens/clusters/api`: the cluster manager's API schemas and their types (issue 19), for
// the routes, the services and the console. TypeBox and the bootstrap's phase list only: nothing
// of the server, so the console's bundle can take its types (and these constants) from here.
export * from './bootstrap';
export * from './clusters';
export * from './deployments';
export * from './gateway';
export * from './problem';
export { type BootstrapPhase, FAILURE_PHASES, PHASES } from './phases';
