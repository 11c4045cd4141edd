/**
 * What one client connection presented last, with what was derived from it.
 *
 * A desktop client sends the same credentials on every request of its
 * keep-alive connection, and deriving lookup keys from them was the largest
 * cost of GET /app_context (measured with bench/instructions.mjs): the session
 * token's SHA-256 was 8,100 of a Bearer request's 86,000 instructions, and a
 * legacy password's username key, name key and credential key (a SHA-256)
 * 15,000 of 96,000. Each derivation is a pure function of what was presented,
 * so a kept one is never stale; everything that can change (the session, the
 * user, the verified password, bans, membership) is still judged from the
 * caches on every request.
 *
 * The HTTP layer keeps one memo per socket (src/http/client-plugin.ts,
 * connectionMemo) and only for the routes that read it. The raw token or
 * password is held with the socket that carries it on every request, for as
 * long as that connection lives, never in a process-wide structure.
 *
 * What is presented is compared with what is kept by `===`, not in constant
 * time. Behind a proxy that carries many clients over one upstream connection
 * the kept value may be another client's, but a value that differs replaces
 * (a password: clears) it, so a request is compared with at most the one
 * request before it on that connection, and one comparison of 50-odd bytes
 * differs by well under a nanosecond (docs/decisions.md, "The hot path").
 */
export interface ConnectionMemo {
  /** The last session token, and its digest. */
  token?: string;
  tokenDigest?: string;
  /** The last legacy username and password that verified, the app they were presented to, and the keys derived from them. */
  password?: PasswordKeys;
}

export interface PasswordKeys {
  appId: string;
  username: string;
  password: string;
  /** `appId \0 username key`: the userIdsByName cache's key. */
  nameCacheKey: string;
  /** The verified-credential cache's key (CredentialCache.key). */
  credentialKey: string;
}

