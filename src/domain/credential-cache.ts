import { createHmac, randomBytes } from 'node:crypto';

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
  private readonly secret = randomBytes(32);
  private readonly entries = new Map<string, { userId: string; passwordHash: string; expires: number }>();

  constructor(private readonly clock: () => number) {}

  key(appId: string, usernameKey: string, password: string): string {
    return createHmac('sha256', this.secret).update(appId).update('\0').update(usernameKey).update('\0').update(password).digest('base64url');
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
