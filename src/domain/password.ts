import { hash, verify } from '@node-rs/argon2';
import type { PasswordHasher } from './deps.js';

export interface Argon2Params {
  memoryCost: number; // KiB
  timeCost: number;
  parallelism: number;
}

/** OWASP Password Storage Cheat Sheet, argon2id: m=19 MiB, t=2, p=1. */
export const OWASP_ARGON2: Argon2Params = { memoryCost: 19456, timeCost: 2, parallelism: 1 };

const ARGON2ID = 2; // Algorithm.Argon2id is a const enum in @node-rs/argon2's typings.

export function argon2Hasher(params: Argon2Params = OWASP_ARGON2): PasswordHasher {
  return {
    hash: (password) => hash(password, { ...params, algorithm: ARGON2ID }),
    async verify(stored, password) {
      try {
        return await verify(stored, password);
      } catch {
        return false; // a malformed stored hash never authenticates
      }
    },
  };
}
