import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import { ERRORS, errorBody, type TransportCode } from './errors.js';

/**
 * What happens on a connection outside the routes: how long a request may
 * take to arrive, and the answers Node would otherwise write itself (a
 * timeout, oversized or malformed headers, CONNECT, an unknown Expect), each
 * in the `{detail, code}` shape before the connection is closed.
 */

export interface Timeouts {
  /** The whole request, headers and body. */
  requestMs: number;
  headersMs: number;
  keepAliveMs: number;
}

/**
 * Fastify's server options for the timeouts. Node checks them every
 * `connectionsCheckingInterval` (default 30 s, which would let a 10 s timeout
 * run for 40): check at a quarter of the headers timeout, at most every second.
 * Fastify's own default requestTimeout is 0, no limit at all.
 */
export function timeoutOptions(t: Timeouts) {
  const headersMs = Math.min(t.headersMs, t.requestMs); // Node refuses a headers timeout above the request timeout
  return {
    requestTimeout: t.requestMs,
    keepAliveTimeout: t.keepAliveMs,
    http: {
      requestTimeout: t.requestMs,
      headersTimeout: headersMs,
      connectionsCheckingInterval: Math.min(1000, Math.max(25, Math.floor(headersMs / 4))),
      // Node answers a Host-less HTTP/1.1 request with an empty 400 of its own; server.ts answers it in our shape.
      requireHostHeader: false,
    },
  };
}

const kResponse = Symbol('tollgate.response');
const kPatient = Symbol('tollgate.patient');
const kWatched = Symbol('tollgate.watched');
const kClosing = Symbol('tollgate.closing');

/** A socket with the latest response routed on it and the request (if any) allowed to outlast the request timeout. */
interface TrackedSocket extends Socket {
  [kResponse]?: ServerResponse;
  [kPatient]?: IncomingMessage;
  [kWatched]?: IncomingMessage;
  /** An error answer waits for the answer in progress: nothing more is read or answered. */
  [kClosing]?: boolean;
}

/** Every request that reaches the routes: remembers its response, so a connection error knows whether an answer has begun. */
export function trackResponse(request: FastifyRequest, reply: FastifyReply): void {
  (request.raw.socket as TrackedSocket)[kResponse] = reply.raw;
}

/** The same for a request answered outside Fastify (fast-path.ts). */
export function trackRawResponse(socket: Socket, res: ServerResponse): void {
  (socket as TrackedSocket)[kResponse] = res;
}

/**
 * Once the admin token is verified (before the body is read), the request may
 * take longer than the request timeout as long as its body keeps arriving: a
 * 1 GiB upload over a slow link takes hours, and only an operator can start
 * one. Unauthenticated slow bodies still meet the whole-request timeout.
 */
export function allowSlowBody(request: FastifyRequest): void {
  (request.raw.socket as TrackedSocket)[kPatient] = request.raw;
}

const RAW: Record<TransportCode | 'not_found', string> = {
  bad_request: rawResponse('bad_request'),
  request_timeout: rawResponse('request_timeout'),
  headers_too_large: rawResponse('headers_too_large'),
  not_found: rawResponse('not_found'),
};

/** A complete HTTP/1.1 error response written straight to the socket: there is no request or reply object to send it with. */
function rawResponse(code: TransportCode | 'not_found'): string {
  const { status } = ERRORS[code];
  const body = JSON.stringify(errorBody(code));
  return [
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}`,
    'content-type: application/json; charset=utf-8',
    `content-length: ${Buffer.byteLength(body)}`,
    'x-content-type-options: nosniff',
    'connection: close',
    '',
    body,
  ].join('\r\n');
}

/**
 * Whether an error response may be written now without corrupting the stream:
 * nothing was routed on this connection yet; or the last routed request was
 * received whole and its answer is complete (the error concerns the next
 * request); or its body is still arriving and no answer to it has begun.
 */
function canAnswer(socket: TrackedSocket): boolean {
  const res = socket[kResponse];
  if (!res) return true;
  return res.req.complete ? res.writableFinished : !res.headersSent;
}

/**
 * Answers (where that is still possible) and closes: the connection's state is
 * unknown after any of these errors. If the last request arrived whole and its
 * answer is still being written (a valid request, then garbage or oversized
 * headers on the same keep-alive connection), that answer finishes first and
 * the error follows it: destroying the socket at once lost both.
 */
function answerAndClose(socket: Duplex, code: TransportCode | 'not_found'): void {
  const tracked = socket as TrackedSocket;
  if (tracked[kClosing]) return; // the parser may report the same bad bytes again while the answer is pending
  const pending = tracked[kResponse];
  if (socket.writable && pending?.req.complete && !pending.writableFinished && !pending.destroyed) {
    tracked[kClosing] = true;
    pending.once('finish', () => {
      if (socket.writable) socket.write(RAW[code]);
      socket.destroy();
    });
    pending.once('close', () => socket.destroy()); // after 'finish', or an answer abandoned half-way
    return;
  }
  if (socket.writable && canAnswer(tracked)) socket.write(RAW[code]);
  socket.destroy();
}

/**
 * A patient request past the request timeout (Node reports it once): from now
 * on it is cut when a whole `idleMs` passes without a byte arriving.
 */
function cutWhenIdle(socket: TrackedSocket, request: IncomingMessage, idleMs: number, log: FastifyBaseLogger): void {
  if (socket[kWatched] === request) return;
  socket[kWatched] = request;
  let seen = socket.bytesRead;
  const timer = setInterval(() => {
    if (request.complete || socket.destroyed) return clearInterval(timer);
    if (socket.bytesRead > seen) {
      seen = socket.bytesRead;
      return;
    }
    clearInterval(timer);
    // The path only: a query string may carry what a client should not have put there (the access log's rule too).
    log.info({ remote: socket.remoteAddress, path: (request.url ?? '').split('?')[0], bytesRead: socket.bytesRead }, `slow body cut: no byte for ${idleMs} ms`);
    answerAndClose(socket, 'request_timeout');
  }, idleMs);
  timer.unref();
  socket.once('close', () => clearInterval(timer));
}

/**
 * Fastify's `clientErrorHandler`: errors Node raises on a connection before
 * or outside any route (Fastify's default answers `{error, message, statusCode}`).
 */
export function clientErrorHandler(log: () => FastifyBaseLogger, idleMs: number) {
  return (err: Error & { code?: string }, socket: Socket): void => {
    if (socket.destroyed) return;
    if (err.code === 'ECONNRESET' || err.code === 'EPIPE') {
      socket.destroy();
      return;
    }
    const tracked = socket as TrackedSocket;
    if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      const patient = tracked[kPatient];
      if (patient && !patient.complete && patient === tracked[kResponse]?.req) return cutWhenIdle(tracked, patient, idleMs, log());
      log().debug({ remote: socket.remoteAddress }, 'request timeout: answered 408 and closed the connection');
      return answerAndClose(socket, 'request_timeout');
    }
    log().debug({ remote: socket.remoteAddress, code: err.code }, 'malformed request: answered and closed the connection');
    answerAndClose(socket, err.code === 'HPE_HEADER_OVERFLOW' ? 'headers_too_large' : 'bad_request');
  };
}

/** Requests Node would answer itself, outside Fastify: our answers instead. */
export function guardConnections(server: Server): void {
  // RFC 9110 10.1.1 lets a server ignore an expectation it does not know; Node would send an empty 417.
  server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => server.emit('request', request, response));
  // CONNECT is no method of this API; without a listener Node drops the connection without a word.
  server.on('connect', (_request: IncomingMessage, socket: Duplex) => answerAndClose(socket, 'not_found'));
}
