import { hash, timingSafeEqual } from 'node:crypto';
import type { RandomSource } from './deps.js';

export type TokenKind = 'session' | 'secret' | 'admin' | 'key';

const PREFIX: Record<TokenKind, string> = {
  session: 'tg_sess_',
  secret: 'tg_sec_',
  admin: 'tg_adm_',
  key: 'tg_key_',
};

/** 256 random bits, base64url, behind a readable prefix (API keys: 128 bits, they are identifiers). */
export function newToken(kind: TokenKind, random: RandomSource): string {
  return PREFIX[kind] + random(kind === 'key' ? 16 : 32).toString('base64url');
}

/** Secrets are stored only as this digest; a database leak yields nothing usable. */
export function digest(token: string): string {
  return hash('sha256', token, 'hex'); // one-shot: a third of createHash's cost, twice per request on the hot path
}

/** Constant-time: `presented` is attacker input compared against a stored digest. */
export function digestMatches(presented: string, storedDigest: string | Buffer): boolean {
  const a = hash('sha256', presented, 'buffer');
  const b = typeof storedDigest === 'string' ? Buffer.from(storedDigest, 'hex') : storedDigest;
  return a.length === b.length && timingSafeEqual(a, b);
}
