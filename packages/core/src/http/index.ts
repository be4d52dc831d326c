export { type BearerGuardOptions, createHttpApp, type ErrorHandlingOptions, type ErrorRenderer, type HttpAppOptions, installBearerGuard, installErrorHandling, isDocsPath, type RegisteredRoute, registeredRoutes, renderDetail, type ValidationDetail } from './app';
export * from './web-assets';
