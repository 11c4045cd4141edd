import type { Provider } from '../../store/repositories/sales.js';
import { KeySeal } from '../signing/seal.js';

/**
 * A store's signing secret must be read back to verify each delivery, so it
 * cannot be hashed: it is sealed like the signing keys (AES-256-GCM under
 * SIGNING_KEY_SEAL, bound to its app and provider), and stored as base64 of its
 * bytes when no KEK is configured, as the keys are then.
 */
const kidOf = (provider: Provider) => `integration:${provider}`;

export function sealSecret(seal: KeySeal, appId: string, provider: Provider, secret: string): string {
  return seal.seal(appId, kidOf(provider), Buffer.from(secret, 'utf8').toString('base64'));
}

/** UnsealError when this node was not given the KEK that sealed it. */
export function openSecret(seal: KeySeal, appId: string, provider: Provider, stored: string): string {
  return seal.open(appId, kidOf(provider), stored).toString('utf8');
}

/** What an operator sees of a secret after it was set: its last four characters. */
export function secretHint(secret: string): string {
  return `…${secret.slice(-4)}`;
}

export { KeySeal };
