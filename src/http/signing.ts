/**
 * Signed answers (docs/signing.md, "Signed answers"): every client-API answer
 * to a request that carries `Tollgate-Nonce`, 2xx and errors alike, gets
 * `Tollgate-Signature` and `Tollgate-Key-Cert`, so a client can tell the
 * server's answers from an emulator's, a replay, or an answer to another
 * request or another app.
 *
 * The nonce is read at the end of step 1 (client-plugin.ts calls readNonce);
 * the request body's hash is taken by the client content parser from the raw
 * bytes; the answer is signed in onSend, where the bytes Fastify will write
 * are final. A request without a nonce costs one header lookup and one
 * `=== null` in onSend.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, onSendHookHandler } from 'fastify';
import { DomainError } from '../domain/errors.js';
import { downloadLine, NONCE, sha256Hex } from '../domain/signing/format.js';
import { currentSigningKey, peekSigningKey, sealedCauseOf, type SigningKey } from '../domain/signing/keys.js';
import type { Services } from '../domain/services.js';
import type { AppRecord } from '../domain/records.js';
import { credentialsSha256, NO_BODY_SHA256, signatureOf } from './signed-answer.js';
import { stepHook } from './request-steps.js';

/** What the answer to a request with a nonce is signed over, besides what the request itself holds. */
export interface SigningState {
  nonce: string;
  /** Hex SHA-256 of the request body bytes as received: the empty hash until the content parser has read a body. */
  bodySha256: string;
  /** A download's file hash (kept since upload): a 200/206 signs it and the Content-Range instead of the streamed body. */
  fileSha256: string | null;
  /**
   * The body without the fields only a signed answer carries (`ban_reason`, `user_id`), set when the error handler
   * added them: an answer that goes out unsigned after all (no usable key, signing failed) is sent as this instead,
   * so those fields never reach a client unsigned.
   */
  unsignedBody?: object;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set at the end of step 1 when the request carries a valid Tollgate-Nonce; null otherwise (answered unsigned). */
    signing: SigningState | null;
  }
}

const NONCE_HEADER = 'tollgate-nonce';
/** One warning per app per minute when it cannot sign: a misconfigured app must not flood the log at request rate. */
const WARN_EVERY_MS = 60_000;
const WARNED_APPS_KEPT = 10_000;

/**
 * The end of step 1, before anything else of the request is done: a malformed
 * nonce is a 422 naming the header, a missing one is 422 nonce_required when
 * the app requires signatures. Answers to both are unsigned (there is no
 * usable nonce to sign over). Returns the error to fail the request with.
 */
export function readNonce(request: FastifyRequest, app: AppRecord): DomainError | null {
  const nonce = request.headers[NONCE_HEADER];
  if (nonce === undefined) {
    return app.signaturesRequired
      ? new DomainError('nonce_required', undefined, [{ field: 'header.tollgate-nonce', message: 'is required by this application' }])
      : null;
  }
  // Node joins repeated unknown headers with ", ": two nonces fail the pattern like any other malformed one.
  if (typeof nonce !== 'string' || !NONCE.test(nonce)) {
    const message = 'must be 16 to 64 characters of A-Z, a-z, 0-9, _ and -';
    return new DomainError('validation_error', `Invalid request: header.tollgate-nonce ${message}`, [{ field: 'header.tollgate-nonce', message }]);
  }
  request.signing = { nonce, bodySha256: NO_BODY_SHA256, fileSha256: null };
  return null;
}

/** Called by the client content parser with the raw body bytes, before they are decoded or parsed. */
export function noteRequestBody(request: FastifyRequest, body: Buffer): void {
  if (request.signing !== null) request.signing.bodySha256 = sha256Hex(body);
}

/** The download route: its 200/206 is signed over the whole file's hash, not over the bytes of this (partial) stream. */
export function noteDownload(request: FastifyRequest, fileSha256: string): void {
  if (request.signing !== null) request.signing.fileSha256 = fileSha256;
}

/** Registers the signing hook on the client routes' scope (call once, beside requireApp). */
export function signAnswers(app: FastifyInstance, s: Services): void {
  app.decorateRequest('signing', null);
  const warnedAt = new Map<string, number>();
  const failedAt = new Map<string, number>();

  /** Whether to log this app's condition now: once per app per minute (a clock set back logs again). */
  function due(seen: Map<string, number>, appId: string, now: number): boolean {
    const last = seen.get(appId);
    if (last !== undefined && now - last < WARN_EVERY_MS && now >= last) return false;
    if (seen.size >= WARNED_APPS_KEPT) seen.clear();
    seen.set(appId, now);
    return true;
  }

  function unsigned(request: FastifyRequest, now: number): void {
    const appId = request.ctx.app.id;
    if (!due(warnedAt, appId, now)) return;
    const sealed = sealedCauseOf(s.caches.signingKeys.peek(appId, now));
    if (sealed !== null) {
      request.log.error({ appId, cause: sealed }, 'a request asked for a signed answer, but the app\'s signing keys are sealed under a key this node was not given: answering unsigned');
      return;
    }
    request.log.warn({ appId }, 'a request asked for a signed answer, but the app has no usable signing key (none certified, or all retired or expired): answering unsigned');
  }

  /**
   * The key could not be loaded (the database is down) or signing failed: the
   * answer goes out unsigned, which an SDK refuses as missing_signature, rather
   * than turning every answer into a 500. Logged once per app per minute (at
   * request rate a database outage would flood the log); the error's message
   * only, never an object that might hold key material.
   */
  function failed(request: FastifyRequest, err: unknown, done: (err: null, payload?: string) => void): void {
    const appId = request.ctx.app.id;
    if (due(failedAt, appId, s.clock())) {
      request.log.error({ appId, reqId: request.id, cause: err instanceof Error ? err.message : 'unknown' }, 'signing the answer failed: answering unsigned (logged once per app per minute)');
    }
    sendUnsigned(request, done);
  }

  /** An answer that goes out unsigned: without the fields only a signed answer may carry (SigningState.unsignedBody). */
  function sendUnsigned(request: FastifyRequest, done: (err: null, payload?: string) => void): void {
    const plain = request.signing?.unsignedBody;
    if (plain !== undefined) done(null, JSON.stringify(plain));
    else done(null);
  }

  /** Signs the answer; false when it goes out unsigned (no usable key, or a body that cannot be signed). */
  function apply(request: FastifyRequest, reply: FastifyReply, payload: unknown, key: SigningKey | null, now: number): boolean {
    if (key === null) {
      unsigned(request, now);
      return false;
    }
    const responseLine = lastLine(request, reply, payload);
    if (responseLine === null) {
      request.log.error({ reqId: request.id }, 'an answer with a streamed body that is not a download cannot be signed: answering unsigned');
      return false;
    }
    const signing = request.signing!;
    const signature = signatureOf(key, now, {
      nonce: signing.nonce, appId: request.ctx.app.id, status: reply.statusCode,
      method: request.method, target: request.raw.url ?? request.url, requestBodySha256: signing.bodySha256,
      credentialsSha256: credentialsSha256(request.headers), responseLine,
    });
    reply.header('tollgate-signature', signature).header('tollgate-key-cert', key.certificate);
    return true;
  }

  // Callback style with a synchronous fast path: the unsigned path and a cached key cost no promise.
  app.addHook('onSend', stepHook<onSendHookHandler>('sign', (request, reply, payload, done) => {
    if (request.signing === null) return done();
    const now = s.clock();
    const appId = request.ctx.app.id;
    try {
      const key = peekSigningKey(s, appId, now);
      if (key !== undefined) {
        if (apply(request, reply, payload, key, now)) return done();
        return sendUnsigned(request, done);
      }
    } catch (err) {
      return failed(request, err, done);
    }
    currentSigningKey(s, appId, now).then(
      (key) => {
        let signed: boolean;
        try {
          signed = apply(request, reply, payload, key, now);
        } catch (err) {
          return failed(request, err, done);
        }
        if (signed) done();
        else sendUnsigned(request, done);
      },
      (err) => failed(request, err, done),
    );
  }));
}

/** The last signed line: the hash of the body bytes as sent, or for a download's 200/206 the file line. Null if it cannot be known. */
function lastLine(request: FastifyRequest, reply: FastifyReply, payload: unknown): string | null {
  const signing = request.signing!;
  const status = reply.statusCode;
  if (signing.fileSha256 !== null && (status === 200 || status === 206)) {
    const range = reply.getHeader('content-range');
    return downloadLine(signing.fileSha256, range === undefined ? undefined : String(range));
  }
  // A HEAD answer carries no body (Fastify's HEAD route drops the GET handler's payload after this hook).
  if (request.method === 'HEAD' || payload === undefined || payload === null) return NO_BODY_SHA256;
  if (typeof payload === 'string' || payload instanceof Uint8Array) return sha256Hex(payload);
  return null;
}
