import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { BannedError, DomainError, type ErrorCode, type FieldError } from '../domain/errors.js';
import { storeFailure } from '../domain/store-failures.js';
import { RateLimited, type LimitedAction } from '../domain/limits.js';
import { storeRefused } from './outage.js';

/** Errors of the connection itself, answered before any route runs (src/http/connections.ts). */
export type TransportCode = 'bad_request' | 'request_timeout' | 'headers_too_large';

/** Every error code: its HTTP status and the sentence sent when the domain gave none. */
export const ERRORS: Record<ErrorCode | TransportCode | 'internal_error', { status: number; detail: string }> = {
  invalid_app_credentials: { status: 401, detail: 'Invalid application key or secret' },
  invalid_admin_token: { status: 401, detail: 'Missing or invalid admin token' },
  validation_error: { status: 422, detail: 'The request is not valid' },
  username_taken: { status: 422, detail: 'This username is already taken' },
  invalid_license: { status: 401, detail: 'Invalid license code' },
  license_used: { status: 401, detail: 'This license code has already been used' },
  invalid_credentials: { status: 401, detail: 'Invalid credentials' },
  session_expired: { status: 401, detail: 'The session has expired; log in again' },
  device_required: { status: 401, detail: 'A hardware ID is required' },
  device_mismatch: { status: 401, detail: 'This account is locked to another device' },
  device_limit: { status: 401, detail: 'This account has reached its device limit' },
  membership_inactive: { status: 403, detail: 'The membership is not active' },
  banned: { status: 403, detail: 'Access is banned' },
  anonymous_not_allowed: { status: 401, detail: 'Only logged in users are allowed to access' },
  registration_closed: { status: 403, detail: 'Registration is closed for this application' },
  file_not_found: { status: 404, detail: 'File not found' },
  rate_limited: { status: 429, detail: 'Too many requests; try again later' },
  payload_too_large: { status: 413, detail: 'The request body is too large' },
  not_found: { status: 404, detail: 'Not found' },
  conflict: { status: 409, detail: 'The request conflicts with the current state' },
  range_not_satisfiable: { status: 416, detail: 'The requested range is not satisfiable' },
  service_unavailable: { status: 503, detail: 'The service is temporarily unavailable; try again shortly' },
  nonce_required: { status: 422, detail: 'This application requires signed answers: send a Tollgate-Nonce header' },
  leases_disabled: { status: 403, detail: 'Offline leases are not enabled for this application' },
  trials_disabled: { status: 403, detail: 'Trials are not enabled for this application' },
  trial_used: { status: 403, detail: 'This device or email address has already had a trial' },
  not_authenticated: { status: 401, detail: 'Not signed in' },
  totp_required: { status: 401, detail: 'This account uses two-factor authentication: send the code from the authenticator app' },
  invalid_totp: { status: 401, detail: 'The two-factor code is not valid' },
  csrf_failed: { status: 403, detail: 'Missing or wrong X-CSRF-Token header' },
  forbidden: { status: 403, detail: 'Your role does not allow this' },
  dashboard_not_built: { status: 503, detail: 'run npm run build' },
  hardware_id_required: { status: 422, detail: 'A seat is held by a device: send the x-hardware-id header' },
  seats_exhausted: { status: 409, detail: 'Every seat of this account is in use' },
  seats_not_enabled: { status: 409, detail: 'Floating seats are not enabled for this account' },
  seat_not_found: { status: 404, detail: 'This device holds no seat' },
  reset_cooldown: { status: 429, detail: 'Devices were reset recently; try again later' },
  reset_disabled: { status: 403, detail: 'Resetting devices yourself is not enabled for this application' },
  invalid_client_address: { status: 400, detail: 'X-Forwarded-For from a trusted proxy does not name a client IP address' },
  bad_request: { status: 400, detail: 'The request is not valid HTTP' },
  request_timeout: { status: 408, detail: 'The request did not arrive in time' },
  headers_too_large: { status: 431, detail: 'The request headers are too large' },
  internal_error: { status: 500, detail: 'Internal server error' },
};

/** Seconds a client is told to wait before retrying a 503 (the database or a dependency is down). */
export const RETRY_AFTER_UNAVAILABLE_S = 2;
/** Retry-After of a 503 that needs an operator to act (an app with no usable signing key). */
export const RETRY_AFTER_OPERATOR_S = 60;

export interface ErrorBody {
  detail: string;
  code: string;
  errors?: FieldError[];
  /** Only in a signed `banned` answer, when the ban has a reason (decisions.md, issue 27). */
  ban_reason?: string;
  /** Only in a signed refusal about an identified user (membership, device, user or license ban): that user's id. */
  user_id?: string;
  /** 409 seats_exhausted: the seats in use, the pool's size, and when the soonest live seat ends. */
  in_use?: number;
  max?: number;
  next_free_at?: string;
  /** 429 reset_cooldown: seconds until a self-reset is allowed again, and the last one. */
  retry_after?: number;
  last_reset_at?: string;
}

/** Per-route exceptions to the table, declared where the route is (e.g. license sign-up answers invalid_license with 422). */
export interface RouteErrorConfig {
  statusOverrides?: Partial<Record<ErrorCode, number>>;
  /** The rate limits this route counts against (DECISIONS step 2). */
  limited?: LimitedAction;
}

declare module 'fastify' {
  interface FastifyContextConfig extends RouteErrorConfig {}
}

export function errorBody(code: keyof typeof ERRORS, detail?: string, errors?: FieldError[]): ErrorBody {
  const body: ErrorBody = { detail: detail ?? ERRORS[code].detail, code };
  if (errors) body.errors = errors;
  return body;
}

/** JSON-pointer path of ajv (`/credentials/code`) to the dotted field of DECISIONS.md (`body.credentials.code`). */
function fieldOf(part: string, path: string, missing?: string): string {
  const segments = path.split('/').filter(Boolean).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (missing) segments.push(missing);
  return [part, ...segments].join('.');
}

function fromValidation(err: FastifyError): ErrorBody {
  const part = err.validationContext ?? 'body';
  const errors: FieldError[] = (err.validation ?? []).map((v) => {
    const params = v.params as { missingProperty?: string; additionalProperty?: string };
    const missing = v.keyword === 'required' ? params.missingProperty : v.keyword === 'additionalProperties' ? params.additionalProperty : undefined;
    const message = v.keyword === 'required' ? 'is required' : v.keyword === 'additionalProperties' ? 'is not a known property' : (v.message ?? 'is invalid');
    return { field: fieldOf(part, v.instancePath, missing || undefined), message };
  });
  const first = errors[0];
  return errorBody('validation_error', first ? `Invalid request: ${first.field} ${first.message}` : undefined, errors);
}

const INVALID_JSON = { status: 422, body: errorBody('validation_error', 'Invalid request: the body is not valid JSON', [{ field: 'body', message: 'is not valid JSON' }]) };

/** Maps Fastify's own 4xx (body parsing, limits) onto our codes. Anything else is a 500 with no internals. */
function fromFastify(err: FastifyError): { status: number; body: ErrorBody } | null {
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 413, body: errorBody('payload_too_large') };
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { status: 422, body: errorBody('validation_error', 'Invalid request: the body must be a JSON object', [{ field: 'body', message: 'is required' }]) };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { status: 422, body: errorBody('validation_error', 'Invalid request: the Content-Type header is malformed or not accepted here', [{ field: 'header.content-type', message: 'is malformed or not accepted' }]) };
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return INVALID_JSON;
  }
  if (err instanceof SyntaxError || (err.statusCode === 400 && /JSON|prototype|constructor/i.test(err.message))) return INVALID_JSON;
  if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
    const code = err.statusCode === 404 ? 'not_found' : err.statusCode === 413 ? 'payload_too_large' : 'validation_error';
    return { status: err.statusCode === 404 || err.statusCode === 413 ? err.statusCode : 422, body: errorBody(code) };
  }
  return null;
}

/** Fastify's errors, the domain's, and the store's failures (told apart by storeFailure, src/domain/store-failures.ts). */
export function handleError(err: FastifyError | DomainError, request: FastifyRequest, reply: FastifyReply): void {
  if (err instanceof RateLimited) {
    // RFC 9110 Retry-After and the IETF RateLimit header fields.
    reply.header('retry-after', String(err.retryAfterSeconds))
      .header('ratelimit-limit', String(err.limit))
      .header('ratelimit-remaining', '0')
      .header('ratelimit-reset', String(err.retryAfterSeconds));
  }
  if (err instanceof DomainError) {
    const overrides = (request.routeOptions.config as RouteErrorConfig | undefined)?.statusOverrides;
    const status = overrides?.[err.code] ?? ERRORS[err.code].status;
    // Every 503 carries Retry-After (the API document promises it). A domain 503 (POST /lease with no usable
    // signing key) waits for an operator, so clients are told to come back in a minute, not in seconds.
    if (status === 503) reply.header('retry-after', String(RETRY_AFTER_OPERATOR_S));
    // Only a 422 lists fields (DECISIONS); the same error answered as 401 elsewhere carries none.
    const body = errorBody(err.code, err.hasDetail ? err.message : undefined, status === 422 ? err.fieldErrors : undefined);
    if (err.extra !== undefined) {
      Object.assign(body, err.extra);
      if (typeof err.extra.retry_after === 'number') reply.header('retry-after', String(err.extra.retry_after));
    }
    // The operator's reason goes only to a request that asked for a signed answer: a verified refusal can show it
    // to the user, and the unsigned answers of the seed's clients keep their bytes (SPEC).
    // Whom the refusal is about, so an SDK drops only that user's lease (issue 21.2); signed answers only, as above.
    const reason = err instanceof BannedError ? err.banReason : null;
    if (request.signing && (reason !== null || err.userId !== undefined)) {
      // Should the answer go out unsigned after all (no usable key), the signing hook sends these bytes instead.
      request.signing.unsignedBody = { ...body };
      if (reason !== null) body.ban_reason = reason;
      if (err.userId !== undefined) body.user_id = err.userId;
    }
    void reply.code(status).send(body);
    return;
  }
  const failure = storeFailure(err);
  // A database dropped or a file removed under a running node is an outage too, not a bug.
  if (failure?.kind === 'unavailable') {
    // Not a bug: the database is down, timed out or full. Say so, so clients and load balancers retry.
    storeRefused(request, failure.cause);
    void reply.code(503).header('retry-after', String(RETRY_AFTER_UNAVAILABLE_S)).send(errorBody('service_unavailable'));
    return;
  }
  if (failure?.kind === 'unstorable') {
    void reply.code(422).send(errorBody('validation_error', 'Invalid request: a value contains characters that cannot be stored', [{ field: 'body', message: 'contains characters that cannot be stored' }]));
    return;
  }
  if (failure?.kind === 'conflict') {
    // A uniqueness race the domain did not anticipate: the write was refused, nothing half-done.
    void reply.code(409).send(errorBody('conflict'));
    return;
  }
  if (err.validation) {
    void reply.code(422).send(fromValidation(err));
    return;
  }
  if ((err as { code?: string }).code === 'ECONNRESET' && request.raw.destroyed) {
    // The connection went before the body arrived (the client left, or a stalled upload was cut): no bug, nobody to answer.
    request.log.info({ reqId: request.id, method: request.method, url: request.routeOptions.url ?? 'unmatched' }, 'request aborted: the connection closed before the body arrived');
    void reply.code(400).send(errorBody('bad_request'));
    return;
  }
  const mapped = fromFastify(err);
  if (mapped) {
    void reply.code(mapped.status).send(mapped.body);
    return;
  }
  request.log.error({ err, reqId: request.id }, 'unhandled error');
  void reply.code(500).send(errorBody('internal_error'));
}
