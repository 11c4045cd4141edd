import { hash, randomBytes } from 'node:crypto';

const MAX_ENTRIES = 100_000;
const TTL_MS = 10 * 60_000;

/**
 * Remembers legacy username/password pairs that verified, so a client sending
 * them on every request costs one argon2 verification per 10 minutes instead
 * of one per request.
 *
 * The key is an HMAC of (app, username, password) under a secret that never
 * leaves this process: the cache holds no password and nothing that can be
 * tested offline. An entry is valid only while the user's stored password
 * hash is exactly the one it was verified against, so a password change
 * (which writes a new salted hash) invalidates it on every node at once, and
 * a deleted user has no hash to match. Bans, devices and membership are not
 * cached here: they are checked on every request as before.
 */
export class CredentialCache {
  private readonly hmac = hmacSha256(randomBytes(32).map((b) => b & 0x7f));
  private readonly entries = new Map<string, { userId: string; passwordHash: string; expires: number }>();

  constructor(private readonly clock: () => number) {}

  key(appId: string, usernameKey: string, password: string): string {
    return this.hmac(`${appId}\0${usernameKey}\0${password}`);
  }

  /** True when this key verified against exactly this user and password hash, recently. */
  verified(key: string, userId: string, passwordHash: string): boolean {
    const entry = this.entries.get(key);
    if (!entry) return false;
    if (entry.expires <= this.clock() || entry.userId !== userId || entry.passwordHash !== passwordHash) {
      this.entries.delete(key);
      return false;
    }
    return true;
  }

  remember(key: string, userId: string, passwordHash: string): void {
    if (this.entries.size >= MAX_ENTRIES) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    this.entries.set(key, { userId, passwordHash, expires: this.clock() + TTL_MS });
  }

  /** Drops every entry of a user (their password changed, they were deleted, banned or their devices reset). */
  forgetUser(userId: string): void {
    for (const [key, entry] of this.entries) if (entry.userId === userId) this.entries.delete(key);
  }
}

/**
 * HMAC-SHA256 (RFC 2104) of a string's UTF-8 bytes, base64url, computed as its
 * two hashes with one-shot `crypto.hash`: 1.1 µs per key where createHmac
 * takes 2.3 µs, on every legacy-header request. It needs the padded keys as
 * strings whose UTF-8 bytes are the pads themselves, so every key byte must be
 * below 0x80 (the caller draws 32 bytes of 7 random bits: 224 bits).
 * test/credential-cache.test.ts checks it against createHmac.
 */
export function hmacSha256(key: Uint8Array): (message: string) => string {
  if (key.length > 64 || key.some((b) => b > 0x7f)) throw new Error('hmacSha256: the key must be at most 64 bytes, each below 0x80');
  const pad = (x: number) => String.fromCharCode(...Array.from({ length: 64 }, (_, i) => (key[i] ?? 0) ^ x));
  const inner = pad(0x36);
  const outer = pad(0x5c);
  return (message) => {
    const innerDigest = hash('sha256', inner + message, 'binary'); // latin1: 32 bytes, one char each
    return hash('sha256', Buffer.from(outer + innerDigest, 'latin1'), 'base64url');
  };
}
