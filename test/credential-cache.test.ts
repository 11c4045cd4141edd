import { describe, expect, it } from 'vitest';
import { CredentialCache } from '../src/domain/credential-cache.js';

/** The verified-credential cache of the legacy username/password headers is keyed by SHA-256 under a process secret. */
describe('credential cache', () => {
  it('keys differ by app, username and password, and between two processes (secrets)', () => {
    const a = new CredentialCache(() => 0);
    const b = new CredentialCache(() => 0);
    const keys = new Set([a.key('app1', 'user', 'pw'), a.key('app2', 'user', 'pw'), a.key('app1', 'user2', 'pw'), a.key('app1', 'user', 'pw2'), b.key('app1', 'user', 'pw')]);
    expect(keys.size).toBe(5);
    expect(a.key('app1', 'user', 'pw')).toBe(a.key('app1', 'user', 'pw'));
    expect(a.key('app1', 'user', 'pw')).not.toContain('pw');
    expect(a.key('app1', 'user', 'pw')).toMatch(/^[A-Za-z0-9_-]{43}$/); // a SHA-256, nothing of the input
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
