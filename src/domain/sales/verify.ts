/**
 * Each store's webhook signature, checked exactly as that store documents it,
 * over the raw bytes of the request (never a re-serialised body: one changed
 * space and the HMAC differs). docs/integrations.md names the sources.
 *
 * - Stripe: `Stripe-Signature: t=<unix s>,v1=<hex>[,v1=<hex>…]`, HMAC-SHA256 of
 *   `{t}.{body}` with the endpoint secret; any v1 may match (Stripe sends two
 *   while a secret is rolled); 300 s tolerance (the stripe library's default).
 * - Paddle Billing: `Paddle-Signature: ts=<unix s>;h1=<hex>[;h1=<hex>…]`,
 *   HMAC-SHA256 of `{ts}:{body}`; 5 s tolerance (Paddle's documented default,
 *   which its SDK enforces).
 * - Lemon Squeezy: `X-Signature: <hex>`, HMAC-SHA256 of the body. It carries
 *   no time, so a replayed delivery is stopped only by the event's id
 *   (apply.ts), which grants once whatever arrives again.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Provider } from '../../store/repositories/sales.js';

export const TOLERANCE_SECONDS: Record<Exclude<Provider, 'lemonsqueezy'>, number> = { stripe: 300, paddle: 5 };

/** The header each store signs with (lower case, as Node hands headers over). */
export const SIGNATURE_HEADER: Record<Provider, string> = { stripe: 'stripe-signature', paddle: 'paddle-signature', lemonsqueezy: 'x-signature' };

export type SignatureProblem = 'missing' | 'malformed' | 'stale' | 'mismatch';

function hmacHex(secret: string, parts: (string | Buffer)[]): Buffer {
  const mac = createHmac('sha256', secret);
  for (const p of parts) mac.update(p);
  return mac.digest();
}

/** Constant-time: `candidate` is attacker input compared with a secret-derived value. */
function matches(expected: Buffer, candidate: string): boolean {
  if (!/^[0-9a-fA-F]{64}$/.test(candidate)) return false;
  return timingSafeEqual(expected, Buffer.from(candidate, 'hex'));
}

/** `k=v` entries split by `sep`; repeated keys keep every value. */
function entries(header: string, sep: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const part of header.split(sep)) {
    const at = part.indexOf('=');
    if (at <= 0) continue;
    const key = part.slice(0, at).trim();
    const list = out.get(key) ?? [];
    list.push(part.slice(at + 1).trim());
    out.set(key, list);
  }
  return out;
}

function timed(header: string, sep: string, timeKey: string, sigKey: string, joiner: string, secret: string, body: Buffer, nowMs: number, tolerance: number): SignatureProblem | null {
  const e = entries(header, sep);
  const t = e.get(timeKey);
  const sigs = e.get(sigKey) ?? [];
  if (!t || t.length !== 1 || !/^\d{1,12}$/.test(t[0]!) || sigs.length === 0) return 'malformed';
  const ts = Number(t[0]);
  // Both ways: a timestamp far in the future is as much a replay risk as an old one.
  if (Math.abs(nowMs / 1000 - ts) > tolerance) return 'stale';
  const expected = hmacHex(secret, [t[0]!, joiner, body]);
  // Every candidate is compared (no early exit), so timing does not tell which position matched.
  let ok = false;
  for (const sig of sigs) ok = matches(expected, sig) || ok;
  return ok ? null : 'mismatch';
}

/** Null when the delivery is signed by `secret`; else why not. */
export function verifySignature(provider: Provider, header: string | undefined, secret: string, body: Buffer, nowMs: number): SignatureProblem | null {
  if (header === undefined || header === '') return 'missing';
  if (header.length > 4096) return 'malformed';
  switch (provider) {
    case 'stripe':
      return timed(header, ',', 't', 'v1', '.', secret, body, nowMs, TOLERANCE_SECONDS.stripe);
    case 'paddle':
      return timed(header, ';', 'ts', 'h1', ':', secret, body, nowMs, TOLERANCE_SECONDS.paddle);
    case 'lemonsqueezy':
      return matches(hmacHex(secret, [body]), header.trim()) ? null : 'mismatch';
  }
}
