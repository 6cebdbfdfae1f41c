import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, ERROR_CODES, isAppError, type ErrorBody, type ErrorKind } from '@svc/protocol';
import { isDescriptorExhaustion } from '@svc/platform';
import { STATUS_BY_KIND } from './error-status.js';
import type { RouteMethods } from './route-methods.js';

/** Fastify's own request errors, translated into our kinds and codes with a message that says what to fix. */
const FRAMEWORK_ERRORS: Record<string, { kind: ErrorKind; code: string; title: string }> = {
  FST_ERR_CTP_EMPTY_JSON_BODY: {
    kind: 'invalid',
    code: ERROR_CODES.missingBody,
    title: 'Missing body with JSON data',
  },
  FST_ERR_CTP_INVALID_JSON_BODY: {
    kind: 'invalid',
    code: ERROR_CODES.invalidJson,
    title: 'Invalid JSON data',
  },
  FST_ERR_CTP_BODY_TOO_LARGE: {
    kind: 'too_large',
    code: ERROR_CODES.bodyTooLarge,
    title: 'Request body too large',
  },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    kind: 'invalid',
    code: ERROR_CODES.unsupportedMediaType,
    title: 'Unsupported content type; send application/json',
  },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: {
    kind: 'invalid',
    code: ERROR_CODES.invalidRequest,
    title: 'Content-Length does not match the body',
  },
  FST_ERR_BAD_URL: {
    kind: 'invalid',
    code: ERROR_CODES.invalidRequest,
    title: 'Malformed URL; percent-encode reserved characters',
  },
  FST_ERR_MAX_PARAM_LENGTH: {
    kind: 'invalid',
    code: ERROR_CODES.invalidRequest,
    title: 'A path parameter is too long',
  },
};

export function toAppError(err: unknown): AppError {
  if (isAppError(err)) return err;
  const fe = err as Partial<FastifyError>;
  const known = fe.code ? FRAMEWORK_ERRORS[fe.code] : undefined;
  if (known) return new AppError(known.kind, known.code, known.title, fe.message ?? '');
  // A file or connection the request needed could not be opened (the database's, the vault file...): svcd is at
  // its descriptor limit, which passes as agents disconnect.
  if (isDescriptorExhaustion(err))
    return new AppError(
      'unavailable',
      ERROR_CODES.serverBusy,
      'svcd is out of file descriptors; retry later',
      'raise its open-file limit (LimitNOFILE=) or connect fewer agents to this node',
    );
  // JSON.parse failures, prototype poisoning and similar client faults carry a 4xx statusCode.
  if (
    err instanceof SyntaxError ||
    (fe.statusCode !== undefined && fe.statusCode >= 400 && fe.statusCode < 500)
  ) {
    return new AppError('invalid', ERROR_CODES.invalidJson, 'Invalid JSON data', fe.message ?? '');
  }
  return new AppError('internal', ERROR_CODES.internal, 'Internal server error');
}

export function errorBody(err: AppError): ErrorBody {
  return { errors: err.toItems() };
}

/** Answers an error in our shape; errors Fastify raises before routing come here too (`frameworkErrors`). */
export function sendAppError(request: FastifyRequest, reply: FastifyReply, err: unknown): FastifyReply {
  const appError = toAppError(err);
  if (appError.kind === 'internal') request.log.error({ err }, 'request failed');
  else request.log.debug({ code: appError.code }, appError.message);
  return reply.status(STATUS_BY_KIND[appError.kind]).send(errorBody(appError));
}

/**
 * A path no route has is 404: under the API's prefix the route is unknown (the public OpenAPI document lists the
 * routes); elsewhere the caller has missed the prefix. A known path asked with another method is 405 with the
 * methods it allows.
 */
function routeMiss(
  routes: RouteMethods,
  method: string,
  path: string,
  apiPrefix: string,
): { error: AppError; allow?: string } {
  const allowed = routes.allowedOn(path);
  if (allowed.length === 0) {
    const underApi = path === apiPrefix || path.startsWith(`${apiPrefix}/`);
    const error = new AppError(
      'not_found',
      ERROR_CODES.routeNotFound,
      `No such route: ${method} ${path}`,
      underApi
        ? `check the method and path; GET ${apiPrefix}/openapi.json lists the API's routes`
        : `the API lives under ${apiPrefix}`,
    );
    return { error };
  }
  const allow = allowed.join(', ');
  const error = new AppError(
    'method_not_allowed',
    ERROR_CODES.methodNotAllowed,
    `Method ${method} is not allowed on ${path}`,
    `use one of: ${allow}`,
  );
  return { error, allow };
}

/**
 * `fallback` may answer a request no route has (the web console's deep links); when it returns false the request
 * gets the JSON 404 or 405.
 */
export function registerErrorHandlers(
  app: FastifyInstance,
  routes: RouteMethods,
  apiPrefix: string,
  fallback?: (request: FastifyRequest, reply: FastifyReply) => boolean,
): void {
  app.setErrorHandler((err, request, reply) => sendAppError(request, reply, err));
  app.setNotFoundHandler((request, reply) => {
    if (fallback?.(request, reply)) return reply;
    const path = request.url.split('?')[0] ?? '';
    const { error, allow } = routeMiss(routes, request.method, path, apiPrefix);
    if (allow !== undefined) void reply.header('allow', allow);
    return reply.status(STATUS_BY_KIND[error.kind]).send(errorBody(error));
  });
}
