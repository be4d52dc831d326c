// The cluster routes' schemas live in `../api` (`@ironlens/clusters/api`), the one source of
// requests and answers (issue 19); re-exported here for the routes and their tests.
export * from '../api/clusters';
export * from '../api/problem';
