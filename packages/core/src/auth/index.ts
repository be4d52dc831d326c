export { bearerMatches } from './bearer';
export * from './access';
export * from './permissions';
export * from './tokens';
