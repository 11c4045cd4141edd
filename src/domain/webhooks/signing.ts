import { createHmac, createPrivateKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import type { EndpointRecord } from '../../store/repositories/webhooks.js';
import type { RandomSource } from '../deps.js';
import type { Services } from '../services.js';
import { ed25519 } from '../signing/ed25519.js';
import { UnsealError } from '../signing/seal.js';
import { write } from '../unit-of-work.js';

/**
 * Standard Webhooks 1.0 signatures. The signed content is `{id}.{timestamp}.{body}`;
 * `webhook-signature` holds space-separated `v1,<base64 HMAC-SHA256>` entries, one per
 * live secret of the endpoint (the new one, and the old one for 24 h after a rotation),
 * and one `v1a,<base64 Ed25519>` by the scope's webhook key, whose public half is
 * shown as `whpk_<base64 of the raw 32 bytes>`.
 */

export const SECRET_PREFIX = 'whsec_';
export const PUBLIC_KEY_PREFIX = 'whpk_';
/** How long the secret before a rotation keeps signing beside the new one. */
export const OLD_SECRET_MS = 24 * 60 * 60_000;
/** The key scope of service-wide endpoints (app ids are UUIDs, so it cannot collide). */
export const SERVICE_SCOPE = 'service';

/** 32 random bytes; the spec's secrets are `whsec_` + base64 of 24 to 64 bytes. */
export const newSecret = (random: RandomSource): string => SECRET_PREFIX + random(32).toString('base64');

const hmac = (secret: string, content: string): string =>
  createHmac('sha256', Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64')).update(content).digest('base64');

export function signatureHeader(endpoint: EndpointRecord, key: KeyObject, id: string, timestamp: number, body: string, now: number): string {
  const content = `${id}.${timestamp}.${body}`;
  const entries = [`v1,${hmac(endpoint.secret, content)}`];
  if (endpoint.previousSecret !== null && endpoint.previousSecretUntil !== null && now < endpoint.previousSecretUntil) {
    entries.push(`v1,${hmac(endpoint.previousSecret, content)}`);
  }
  entries.push(`v1a,${ed25519.sign(Buffer.from(content), key).toString('base64')}`);
  return entries.join(' ');
}

const keys = new WeakMap<Services, Map<string, { privateKey: KeyObject; publicKey: string }>>();

/**
 * The Ed25519 webhook key of a scope (an app id, or SERVICE_SCOPE), made on first use. The first node to make
 * it wins (the insert does nothing for the others, who read the winner's). Its private half is sealed at rest
 * like the signing keys (signing/seal.ts).
 */
export async function webhookKey(s: Services, scope: string): Promise<{ privateKey: KeyObject; publicKey: string }> {
  let cache = keys.get(s);
  if (!cache) keys.set(s, (cache = new Map()));
  const hit = cache.get(scope);
  if (hit) return hit;
  let stored = await s.store.webhooks.findKey(scope);
  if (!stored) {
    const pair = generateKeyPairSync('ed25519');
    const privateKey = s.seal.seal(scope, 'webhook', pair.privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64'));
    const publicKey = PUBLIC_KEY_PREFIX + Buffer.from(pair.publicKey.export({ format: 'jwk' }).x!, 'base64url').toString('base64');
    await write(s, ({ tx }) => tx.webhooks.insertKey(scope, privateKey, publicKey, s.clock()));
    stored = (await s.store.webhooks.findKey(scope))!;
  }
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: s.seal.open(scope, 'webhook', stored.privateKey), format: 'der', type: 'pkcs8' });
  } catch (err) {
    if (err instanceof UnsealError) throw err;
    throw new UnsealError(`the webhook key of ${scope === SERVICE_SCOPE ? 'the service' : `app ${scope}`} is stored in a form that is not a key`);
  }
  const key = { privateKey, publicKey: stored.publicKey };
  cache.set(scope, key);
  return key;
}
