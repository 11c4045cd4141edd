import { randomBytes } from 'node:crypto';

/** Milliseconds since the epoch. Injected so expiry tests are deterministic. */
export type Clock = () => number;

/** Cryptographically secure random bytes. Injected for the same reason. */
export type RandomSource = (size: number) => Buffer;

export interface PasswordHasher {
  hash(password: string): Promise<string>;
  verify(hash: string, password: string): Promise<boolean>;
}

export const systemClock: Clock = () => Date.now();
export const cryptoRandom: RandomSource = (size) => randomBytes(size);
