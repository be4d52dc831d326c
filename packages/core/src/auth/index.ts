export { bearerMatches } from './bearer';
