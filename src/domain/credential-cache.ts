import { hash, randomBytes } from 'node:crypto';

const MAX_ENTRIES = 100_000;
const TTL_MS = 10 * 60_000;

/**
 * Remembers legacy username/password pairs that verified, so a client sending
 * them on every request costs one argon2 verification per 10 minutes instead
 * of one per request.
 *
 * The key is SHA-256 of (secret, app, username, password), with a 256-bit
 * secret drawn at start that never leaves this process: the cache holds no
 * password and nothing that can be tested offline. (Secret-prefix SHA-256 is
 * unfit as a MAC only because a tag it gives away can be extended; these keys
 * are map keys inside the process, never given to anyone. One hash of ~2
 * blocks per request where HMAC took ~5: measured 7.7k instructions of the
 * password request's 20k over a Bearer request.) An entry is valid only
 * while the user's stored password hash is exactly the one it was verified
 * against, so a password change (which writes a new salted hash) invalidates
 * it on every node at once, and
 * a deleted user has no hash to match. Bans, devices and membership are not
 * cached here: they are checked on every request as before.
 */
export class CredentialCache {
  private readonly secret = randomBytes(32).toString('base64url');
  private readonly entries = new Map<string, { userId: string; passwordHash: string; expires: number }>();

  constructor(private readonly clock: () => number) {}

  /** The fields joined by NUL: an app id and a username key hold none, so the password (last) cannot shift them. */
  key(appId: string, usernameKey: string, password: string): string {
    return hash('sha256', `${this.secret}\0${appId}\0${usernameKey}\0${password}`, 'base64url');
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
