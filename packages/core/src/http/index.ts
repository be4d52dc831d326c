export { type BearerGuardOptions, createHttpApp, type ErrorRenderer, type HttpAppOptions, installBearerGuard, installErrorHandling, isDocsPath, renderDetail } from './app';
