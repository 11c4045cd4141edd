import { createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CredentialCache, hmacSha256 } from '../src/domain/credential-cache.js';

/** The verified-credential cache of the legacy username/password headers is keyed by an HMAC under a process secret. */
describe('credential cache', () => {
  it('hmacSha256 is HMAC-SHA256 of the UTF-8 bytes, as createHmac computes it', () => {
    for (let round = 0; round < 50; round++) {
      const key = randomBytes(1 + (round % 64)).map((b) => b & 0x7f);
      for (const message of ['', 'app\0user\0password', 'bénch\0pässwörd ✓ 🔑', 'x'.repeat(2000), '\0\u00ff\u0080']) {
        expect(hmacSha256(key)(message)).toBe(createHmac('sha256', key).update(message, 'utf8').digest('base64url'));
      }
    }
  });

  it('hmacSha256 refuses a key it cannot represent', () => {
    expect(() => hmacSha256(Uint8Array.of(0x80))).toThrow();
    expect(() => hmacSha256(new Uint8Array(65))).toThrow();
  });

  it('keys differ by app, username and password, and between two processes (secrets)', () => {
    const a = new CredentialCache(() => 0);
    const b = new CredentialCache(() => 0);
    const keys = new Set([a.key('app1', 'user', 'pw'), a.key('app2', 'user', 'pw'), a.key('app1', 'user2', 'pw'), a.key('app1', 'user', 'pw2'), b.key('app1', 'user', 'pw')]);
    expect(keys.size).toBe(5);
    expect(a.key('app1', 'user', 'pw')).toBe(a.key('app1', 'user', 'pw'));
    expect(a.key('app1', 'user', 'pw')).not.toContain('pw');
  });

  it('an entry holds only for the same user and the same stored hash, until it expires', () => {
    let now = 0;
    const cache = new CredentialCache(() => now);
    const key = cache.key('app', 'user', 'pw');
    cache.remember(key, 'u1', 'hash1');
    expect(cache.verified(key, 'u1', 'hash1')).toBe(true);
    expect(cache.verified(key, 'u1', 'hash2')).toBe(false); // password changed: dropped
    expect(cache.verified(key, 'u1', 'hash1')).toBe(false);
    cache.remember(key, 'u1', 'hash1');
    expect(cache.verified(key, 'u2', 'hash1')).toBe(false); // another user under that name now
    cache.remember(key, 'u1', 'hash1');
    now += 10 * 60_000;
    expect(cache.verified(key, 'u1', 'hash1')).toBe(false);
  });
});
