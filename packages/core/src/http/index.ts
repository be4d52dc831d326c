export { type BearerGuardOptions, createHttpApp, type ErrorHandlingOptions, type ErrorRenderer, type HttpAppOptions, installBearerGuard, installErrorHandling, isDocsPath, type RegisteredRoute, registeredRoutes, renderDetail, type ValidationDetail } from './app';
export { authRoutes, type AuthRoutesOptions } from './auth.routes';
export { type ListenerMetrics, metricsRoute, recordHttpMetrics, UNMATCHED_ROUTE } from './http-metrics';
export * from './web-assets';
export * from './browser-guard';
export * from './limits';
export * from './security-headers';
