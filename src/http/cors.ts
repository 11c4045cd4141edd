import cors from '@fastify/cors';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { errorBody } from './errors.js';

/**
 * CORS for the client interface only (call it in the client routes' scope,
 * before they are declared). @fastify/cors answers preflights through an
 * `OPTIONS *` route, which matches every path of the server, the admin API
 * and /metrics included. Only a preflight (Origin and
 * Access-Control-Request-Method) for a path of this scope reaches it; any
 * other OPTIONS request is a 404 in our shape, with no Access-Control-*
 * header (an admin token does not belong in a browser).
 */
export async function clientCors(scope: FastifyInstance, origins: string[]): Promise<void> {
  const paths: RegExp[] = [];
  scope.addHook('onRoute', (route) => {
    if (route.url !== '*') paths.push(pathPattern(route.url));
  });
  scope.addHook('onRequest', (request, reply, done) => {
    if (request.method !== 'OPTIONS' || isPreflightFor(request, paths)) return done();
    void reply.code(404).send(errorBody('not_found'));
  });
  await scope.register(cors, {
    origin: origins,
    methods: ['GET', 'POST'],
    allowedHeaders: ['content-type', 'authorization', 'x-api-key', 'x-api-secret', 'x-api-license-code', 'x-api-username', 'x-api-password', 'x-hardware-id', 'range', 'if-range', 'tollgate-nonce'],
    exposedHeaders: ['content-disposition', 'content-range', 'etag', 'retry-after', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'tollgate-signature', 'tollgate-key-cert'],
    maxAge: 600,
  });
}

function isPreflightFor(request: FastifyRequest, paths: RegExp[]): boolean {
  if (request.headers.origin === undefined || request.headers['access-control-request-method'] === undefined) return false;
  const query = request.url.indexOf('?');
  const path = query === -1 ? request.url : request.url.slice(0, query);
  return paths.some((p) => p.test(path));
}

/** A route URL (`/files/:file_id/download`) as a pattern for request paths. */
function pathPattern(url: string): RegExp {
  const segments = url.split('/').map((s) => (s.startsWith(':') ? '[^/]+' : s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  return new RegExp(`^${segments.join('/')}$`);
}
