import { CLUSTER_ERRORS, COMMON_ERRORS, problems } from '../api/problem';

/** What every feature's routes share: the OpenAPI security entry and the error answers. */
export const security = [{ bearer: [] }];

/** The errors of a route that needs no registered cluster. */
export const commonErrors = problems(...COMMON_ERRORS);

/** The errors of a route on a registered cluster (404 unknown, 502/504 its API server); `extra`: the route's own. */
export const onClusterErrors = <const S extends readonly number[]>(...extra: S) => ({ ...problems(...CLUSTER_ERRORS), ...problems(...extra) });
