import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import { redactQuery } from '../audit/redact';
import { type AccessControl, installAccessControl, routeBodyPermissions } from '../auth/access';
import { bearerMatches } from '../auth/bearer';
import { PUBLIC } from '../auth/permissions';
import { AppError, clipStrings, isAppError } from '../errors';
import { type ListenerMetrics, metricsRoute, recordHttpMetrics } from './http-metrics';
import { type BrowserGuardOptions, installBrowserGuard } from './browser-guard';
import { capConnections, DEFAULT_HTTP_LIMITS, type HttpLimits, serverTimeouts } from './limits';
import { installSecurityHeaders } from './security-headers';
import type { TrustProxy } from './trusted-proxies';

/** How an API renders an error: its seed's own shape. */
export type ErrorRenderer = (err: AppError) => unknown;

/**
 * FastAPI's shape, used by seeds 004 and 001: `{"detail": "..."}`. An error passed
 * through from a storage agent keeps seed 004's own shape: `{"agent": id, "error": "..."}`.
 */
export const renderDetail: ErrorRenderer = (err) => {
  if (typeof err.extra.agent === 'string' && err.extra.error !== undefined) return { agent: err.extra.agent, error: err.extra.error };
  return { detail: err.message, ...err.extra };
};

export interface HttpAppOptions {
  /** OpenAPI title. */
  title: string;
  /** OpenAPI version string. Default is `0.1.0`. */
  version?: string;
  description?: string;
  /** Serve Swagger UI at `/docs`, ReDoc at `/redoc`, the document at `/openapi.json`. Default is `true`. */
  docs?: boolean;
  /** Fastify logger. Default is `false`. Its request lines show query values named like secrets as `[redacted]` ({@link redactQuery}). */
  logger?: FastifyServerOptions['logger'];
  /** Which `X-Forwarded-For` hops to believe for the client address (`trustedProxiesFromEnv`). Default is `false`: none. */
  trustProxy?: TrustProxy;
  /** Render errors of routes outside any API plugin. Default is `renderDetail`. */
  renderError?: ErrorRenderer;
  /** Record this listener's requests in the process' metrics and serve them at `GET /metrics`. Default: no metrics. */
  metrics?: ListenerMetrics;
  /** Timeouts and connection caps of the listener (`httpLimitsFromEnv`). Default is {@link DEFAULT_HTTP_LIMITS}. */
  limits?: HttpLimits;
  /**
   * A listener browsers reach (the console, the kind panel): `Host`, `Origin` and form checks on
   * every route ({@link installBrowserGuard}). Default: none (the provisioning and agent listeners,
   * reached by machines under any name).
   */
  browserGuard?: BrowserGuardOptions;
  /**
   * Enforce every route's permission (`config.permission`) with these tokens (issue 20,
   * docs/access.md). Default: none (an app whose plugins guard themselves, like the agent's).
   */
  access?: AccessControl;
  /**
   * Called with the bare app before any hook, route or plugin is added, so what it installs
   * (an `onRoute` hook) sees every route: tests compare each answer with what its handler
   * returned (`answerCheck` of core's test helpers). Default: none.
   */
  instrument?: (app: FastifyInstance) => void;
}

/** One route as registered: what the permission test and docs/access.md enumerate. */
export interface RegisteredRoute {
  method: string;
  url: string;
  permission: string | undefined;
  /** Permissions the route also requires by what its body carries (`config.bodyPermissions`). */
  bodyPermissions: ReadonlyArray<{ permission: string; when: string }>;
  /** Hidden from the OpenAPI document (pages, assets, docs). */
  hidden: boolean;
  /** The answer schemas it declares, by status, as declared (before the OpenAPI document's rewriting). */
  response: Readonly<Record<string, unknown>> | undefined;
}

const ROUTES = new WeakMap<FastifyInstance, RegisteredRoute[]>();

/** Every route registered on an app built by {@link createHttpApp}, in registration order (HEAD twins left out). */
export function registeredRoutes(app: FastifyInstance): RegisteredRoute[] {
  return ROUTES.get(app) ?? [];
}

const require = createRequire(import.meta.url);

/** The ajv options every API shares (Fastify's defaults apply underneath: `useDefaults`…). */
const AJV_OPTIONS = { removeAdditional: false, allErrors: true, allowUnionTypes: true } as const;

type Validate = ((data: unknown) => unknown) & { errors?: unknown };
type RouteValidator = (route: { httpPart?: string }) => Validate;
type ValidatorPool = (externalSchemas: unknown, options: { customOptions: Record<string, unknown> }) => RouteValidator;
type ValidatorFactory = (externalSchemas: unknown, options?: unknown) => RouteValidator;
type Serialize = (data: unknown) => string;
type SerializerFactory = (externalSchemas: unknown, options?: unknown) => (route: unknown) => Serialize;

/**
 * A validator compiled at its first use instead of at start: Ajv compiling every route's schema
 * was most of `ironlens serve`'s start (issue 19), for routes a process may never serve. What
 * Fastify reads after a call (`errors`) is copied from the compiled function.
 */
function lazyValidator(compile: () => Validate): Validate {
  let fn: Validate | undefined;
  const validate: Validate = (data) => {
    fn ??= compile();
    const out = fn(data);
    validate.errors = fn.errors;
    return out;
  };
  return validate;
}

/** Response serializers (fast-json-stringify), likewise built at their first use (the compiler loaded then too). */
function lazySerializers(): SerializerFactory {
  let select: SerializerFactory | undefined;
  return (externalSchemas, options) => {
    let build: ((route: unknown) => Serialize) | undefined;
    return (route) => {
      let fn: Serialize | undefined;
      return (data) => {
        if (!fn) {
          select ??= (require('@fastify/fast-json-stringify-compiler') as () => SerializerFactory)();
          build ??= select(externalSchemas, options);
          fn = build(route);
        }
        return fn(data);
      };
    };
  };
}

/**
 * Two validators: query strings, path parameters and headers are text, so they are coerced
 * (`?force=true`, `?limit=10`); a JSON body already has types, so it is taken as sent —
 * `{"enabled": null}`, `{"enabled": [true]}` or `{"worker_id": 123}` is a 422, never
 * silently turned into `false`, `true` or `"123"`. Ajv is loaded at the first validation.
 */
function bodyStrictValidators(): ValidatorFactory {
  let pools: { coercing: ValidatorPool; strict: ValidatorPool } | undefined;
  const poolsNow = () => {
    if (!pools) {
      const AjvCompiler = require('@fastify/ajv-compiler') as () => ValidatorPool;
      pools = { coercing: AjvCompiler(), strict: AjvCompiler() };
    }
    return pools;
  };
  return (externalSchemas) => {
    let forText: RouteValidator | undefined;
    let forBody: RouteValidator | undefined;
    return (route) =>
      lazyValidator(() => {
        if (route.httpPart === 'body') {
          forBody ??= poolsNow().strict(externalSchemas, { customOptions: { ...AJV_OPTIONS, coerceTypes: false } });
          return forBody(route);
        }
        forText ??= poolsNow().coercing(externalSchemas, { customOptions: { ...AJV_OPTIONS, coerceTypes: 'array' } });
        return forText(route);
      });
  };
}

/** Fastify's request serializer, with the URL's secret query values redacted. */
function requestLogValue(req: FastifyRequest): Record<string, unknown> {
  return { method: req.method, url: redactQuery(req.url), version: req.headers?.['accept-version'], host: req.host, remoteAddress: req.ip, remotePort: req.socket?.remotePort };
}

/**
 * The logger option with every request line's URL redacted (issue 29, finding 11: a token or
 * password in a query string reached the request log verbatim). Default: no logger.
 */
function redactingLogger(logger: HttpAppOptions['logger']): FastifyServerOptions['logger'] {
  if (!logger) return false;
  const base = logger === true ? {} : (logger as Exclude<FastifyServerOptions['logger'], boolean | undefined> & { serializers?: Record<string, unknown> });
  return { ...base, serializers: { ...base.serializers, req: requestLogValue } } as FastifyServerOptions['logger'];
}

/**
 * Builds a Fastify instance with the shared behaviour: OpenAPI from route schemas,
 * docs, FastAPI-style validation errors (422), catalog errors rendered per API.
 * It does not listen; `main` does.
 */
export async function createHttpApp(opts: HttpAppOptions): Promise<FastifyInstance> {
  const limits = opts.limits ?? DEFAULT_HTTP_LIMITS;
  const timeouts = serverTimeouts(limits);
  const app = Fastify({
    requestTimeout: timeouts.requestTimeout,
    http: { headersTimeout: timeouts.headersTimeout, requestTimeout: timeouts.requestTimeout, connectionsCheckingInterval: timeouts.connectionsCheckingInterval },
    logger: redactingLogger(opts.logger),
    trustProxy: opts.trustProxy ?? false,
    ajv: { customOptions: { ...AJV_OPTIONS, coerceTypes: 'array' } },
    // Fastify types a validator as Ajv's function (with its `schema`); a lazy one has only what Fastify calls.
    schemaController: { compilersFactory: { buildValidator: bodyStrictValidators() as never, buildSerializer: lazySerializers() } },
    bodyLimit: 16 * 1024 * 1024,
    routerOptions: { ignoreTrailingSlash: true },
  } as FastifyServerOptions);
  capConnections(app.server, limits);
  acceptEmptyJsonDelete(app);
  opts.instrument?.(app);
  // First, so that every route of every plugin registered later is recorded.
  if (opts.metrics) recordHttpMetrics(app, opts.metrics);
  installSecurityHeaders(app);
  if (opts.browserGuard) installBrowserGuard(app, opts.browserGuard);
  const routes: RegisteredRoute[] = [];
  ROUTES.set(app, routes);
  app.addHook('onRoute', (r) => {
    const methods = Array.isArray(r.method) ? r.method : [r.method];
    for (const method of methods) {
      if (method === 'HEAD' && methods.length === 1 && routes.some((x) => x.url === r.url && x.method === 'GET')) continue;
      // Read when asked: onRoute hooks of the plugins (registered later, run after this one) may still set the permission.
      routes.push({
        method,
        url: r.url,
        get permission() {
          const p = (r.config as { permission?: unknown } | undefined)?.permission;
          return typeof p === 'string' ? p : undefined;
        },
        get bodyPermissions() {
          return routeBodyPermissions(r.config).map((b) => ({ permission: b.permission, when: b.when }));
        },
        hidden: Boolean((r.schema as { hide?: boolean } | undefined)?.hide),
        response: (r.schema as { response?: Record<string, unknown> } | undefined)?.response,
      });
    }
  });
  if (opts.access) installAccessControl(app, { listener: opts.metrics?.listener, metrics: opts.metrics?.metrics, ...opts.access });

  if (opts.docs !== false) {
    // The documentation describes the API and holds no state: open (`public`).
    app.addHook('onRoute', (r) => {
      if (isDocsPath(r.url) && !(r.config as { permission?: unknown } | undefined)?.permission) r.config = { ...r.config, permission: PUBLIC } as typeof r.config;
    });
    await app.register(swagger, {
      openapi: {
        openapi: '3.0.3',
        info: { title: opts.title, version: opts.version ?? '0.1.0', description: opts.description },
        components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      },
    });
    await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { deepLinking: true } });
    app.get('/openapi.json', { schema: { hide: true }, config: { permission: PUBLIC } }, async () => app.swagger());
    const redocBundle = join(dirname(require.resolve('redoc/package.json')), 'bundles', 'redoc.standalone.js');
    const { readFile } = await import('node:fs/promises');
    app.get('/redoc', { schema: { hide: true }, config: { permission: PUBLIC } }, async (_req, reply) => {
      reply.type('text/html; charset=utf-8');
      return `<!doctype html><html><head><meta charset="utf-8"><title>${opts.title} — ReDoc</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><redoc spec-url="openapi.json"></redoc><script src="redoc/redoc.standalone.js"></script></body></html>`;
    });
    app.get('/redoc/redoc.standalone.js', { schema: { hide: true }, config: { permission: PUBLIC } }, async (_req, reply) => {
      reply.type('application/javascript').header('cache-control', 'public, max-age=86400');
      return readFile(redocBundle);
    });
  }

  if (opts.metrics) metricsRoute(app, opts.metrics);
  installErrorHandling(app, opts.renderError ?? renderDetail);
  return app;
}

/**
 * A `DELETE` that says `Content-Type: application/json` and sends no body is a DELETE without a
 * body (Lens' create-cluster wizard sends its Cancel so: its request helper sets the type on every
 * call), not a 400 "body cannot be empty": the type is dropped before Fastify looks for a parser.
 * A DELETE with a body, and an empty JSON body of any other method, are parsed as before.
 */
function acceptEmptyJsonDelete(app: FastifyInstance): void {
  app.addHook('onRequest', (req, _reply, done) => {
    if (req.method !== 'DELETE') return done();
    const h = req.raw.headers;
    const type = h['content-type'];
    if (type === undefined || h['transfer-encoding'] !== undefined || (h['content-length'] !== undefined && h['content-length'] !== '0')) return done();
    if (/^application\/json\s*(;|$)/i.test(type)) delete h['content-type'];
    done();
  });
}

/**
 * Sets the error and not-found handlers of one encapsulated context (an API plugin),
 * so each API keeps its own error shape when several share one listener.
 */
/** One schema violation, in FastAPI's `detail` item shape. */
export interface ValidationDetail {
  type: string;
  loc: string[];
  msg: string;
}

export interface ErrorHandlingOptions {
  /** Content type of error bodies (e.g. `application/problem+json`). Default: Fastify's JSON. */
  contentType?: string;
  /**
   * Renders a schema violation. Default is FastAPI's `422 {"detail": [...]}`; an API with its own
   * shape (seed 000's problem+json) maps the items to an `AppError` here.
   */
  renderValidation?: (detail: ValidationDetail[]) => AppError | { detail: ValidationDetail[] };
}

export function installErrorHandling(app: FastifyInstance, render: ErrorRenderer, options: ErrorHandlingOptions = {}): void {
  // A not-found handler can be set once per prefix: a plugin mounted at the root shares
  // the root app's handler (same FastAPI shape); one under a prefix gets its own.
  const ownNotFound = app.prefix !== '' || !app.hasDecorator('ironlensNotFound');
  app.setErrorHandler((err: FastifyError, req: FastifyRequest, reply: FastifyReply) => {
    if (isAppError(err)) return send(reply, err.status, render(err));
    if (err.validation) {
      const detail: ValidationDetail[] = err.validation.map((v) => ({
        type: v.keyword,
        loc: [err.validationContext ?? 'body', ...String(v.instancePath || '').split('/').filter(Boolean), ...(v.params && 'missingProperty' in v.params ? [String(v.params.missingProperty)] : [])],
        msg: v.message ?? 'invalid',
      }));
      const rendered = options.renderValidation ? options.renderValidation(detail) : { detail };
      if (isAppError(rendered)) return send(reply, rendered.status, render(rendered));
      return reply.status(422).send(clipStrings(rendered));
    }
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      // Fastify's own client errors: bad JSON, wrong content type, body too large.
      const status = err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' ? 415 : err.statusCode;
      return send(reply, status, render(new AppError('request_invalid', err.message, {}, status)));
    }
    req.log.error({ err }, 'unhandled error');
    return send(reply, 500, render(new AppError('internal_error')));
  });
  function send(reply: FastifyReply, status: number, body: unknown) {
    if (options.contentType) reply.type(options.contentType);
    // A message that quoted a client's input whole is cut here: error bodies stay small.
    return reply.status(status).send(clipStrings(body));
  }
  if (ownNotFound) {
    if (app.prefix === '') app.decorate('ironlensNotFound', true);
    app.setNotFoundHandler((_req, reply) => {
      send(reply, 404, render(new AppError('route_not_found', 'Not Found')));
    });
  }
}

export interface BearerGuardOptions {
  /** The token; when empty, auth is off. */
  token: string | undefined;
  /** Paths (without query) that stay open. */
  publicPaths: (path: string, method: string) => boolean;
  render?: ErrorRenderer;
  /** Content type of the 401 body (e.g. `application/problem+json`). Default: Fastify's JSON. */
  contentType?: string;
}

/** Adds a bearer-token check to one context. 401 with the API's error shape otherwise. */
export function installBearerGuard(app: FastifyInstance, opts: BearerGuardOptions): void {
  const token = opts.token;
  if (!token) return;
  const render = opts.render ?? renderDetail;
  app.addHook('onRequest', async (req, reply) => {
    const url = req.url;
    const q = url.indexOf('?');
    // The router ignores a trailing slash, so the guard does too: `/open/` is `/open`
    // (served, or a 404), never a 401 for a path that is open without the slash.
    const path = (q === -1 ? url : url.slice(0, q)).replace(/(.)\/+$/, '$1');
    if (opts.publicPaths(path, req.method)) return;
    if (!bearerMatches(req.headers.authorization, token)) {
      reply.header('www-authenticate', 'Bearer');
      if (opts.contentType) reply.type(opts.contentType);
      return reply.status(401).send(render(new AppError('auth_required', 'Unauthorized')));
    }
  });
}

/** True for the documentation routes, which describe the API and hold no state. */
export function isDocsPath(path: string): boolean {
  return path === '/docs' || path.startsWith('/docs/') || path === '/redoc' || path.startsWith('/redoc/') || path === '/openapi.json';
}
