import type { Socket } from 'node:net';
import type { UserCredentials } from '../domain/user-auth.js';
import { digest, sessionTokenShaped } from '../domain/tokens.js';

/**
 * The session token's digest, kept per connection: a desktop client sends the
 * same Bearer token on every request of its keep-alive connection, and the
 * SHA-256 that finds its session was the largest single cost of GET
 * /app_context (8,000 of its 86,000 instructions per request, measured with
 * bench/instructions.mjs). A digest is a pure function of the token, so a kept
 * one can never be stale: whether the session is valid is still judged from
 * the sessions cache on every request.
 *
 * The raw token is held with the socket, as the connection's own last request
 * held it, and goes with the connection (docs/decisions.md, "The hot path").
 * A connection only ever compares a token with its own previous one.
 */
const kLast = Symbol('tollgate.sessionDigest');

interface Kept {
  token: string;
  digest: string;
}

type WithKept = Socket & { [kLast]?: Kept };

/** `creds` with `bearerDigest` set from the connection's last token when it is the same token, else computed and kept. */
export function withSessionDigest(creds: UserCredentials, socket: Socket | null | undefined): UserCredentials {
  const token = creds.bearer;
  if (token === undefined || socket == null || !sessionTokenShaped(token)) return creds;
  const kept = (socket as WithKept)[kLast];
  if (kept !== undefined && kept.token === token) {
    creds.bearerDigest = kept.digest;
    return creds;
  }
  const fresh: Kept = { token, digest: digest(token) };
  (socket as WithKept)[kLast] = fresh;
  creds.bearerDigest = fresh.digest;
  return creds;
}
