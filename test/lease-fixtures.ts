import { createHash, createPublicKey, randomBytes, verify, type KeyObject } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import { PASSWORD, type AppSettings, type Harness, type TestApp } from './helpers.js';

/**
 * What the lease tests share: an app that issues leases, a POST /lease call,
 * and a decoder that checks a lease file the way an SDK must (docs/signing.md),
 * rebuilding every signed byte here rather than with the server's format.ts.
 */

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
export const legacy = (username: string, password = PASSWORD) => ({ 'x-api-username': username, 'x-api-password': password });
export const nonce = (): string => randomBytes(18).toString('base64url');

export interface LeaseSettings extends AppSettings {
  offline_grace_seconds?: number;
  lease_renew_seconds?: number;
}

/** An app with leases on (a day of grace, renew after ten minutes unless told otherwise). */
export async function leaseApp(h: Harness, settings: LeaseSettings = {}): Promise<TestApp> {
  const { offline_grace_seconds = 86_400, lease_renew_seconds = 600, ...rest } = settings;
  const app = await h.createApp(rest);
  const res = await h.admin('PATCH', `/apps/${app.id}`, { offline_grace_seconds, lease_renew_seconds });
  if (res.statusCode !== 200) throw new Error(`lease settings: ${res.statusCode} ${res.body}`);
  return app;
}

/** POST /lease with the app's headers, a fresh nonce and the hardware id, unless the caller overrides them. */
export function postLease(h: Harness, app: TestApp, headers: Record<string, string | undefined> = {}, remoteAddress?: string): Promise<LightMyRequestResponse> {
  const all: Record<string, string | undefined> = { ...app.headers, 'tollgate-nonce': nonce(), 'x-hardware-id': 'hw-1', ...headers };
  const sent = Object.fromEntries(Object.entries(all).filter((e): e is [string, string] => e[1] !== undefined));
  return h.inject({ method: 'POST', url: '/lease', headers: sent, ...(remoteAddress !== undefined && { remoteAddress }) });
}

export const context = (h: Harness, app: TestApp, headers: Record<string, string>): Promise<LightMyRequestResponse> =>
  h.inject({ method: 'GET', url: '/app_context', headers: { ...app.headers, ...headers } });

export const hwidHashOf = (appId: string, hardwareId: string): string => createHash('sha256').update(`${appId}\n${hardwareId}`).digest('hex');

/** An Ed25519 public key from base64url of its 32 raw bytes, as an SDK pins it. */
export const rawPublicKey = (b64: string): KeyObject => createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: b64 }, format: 'jwk' });

export interface DecodedLease {
  kid: string;
  cert: Record<string, unknown>;
  payload: Record<string, unknown>;
  payloadBytes: Buffer;
}

/**
 * Decodes a lease file and verifies it as an SDK would: the armour and its
 * 64-character lines, the JSON envelope, the certificate against the root, the
 * lease signature against the certificate's key over `tollgate/lease/v1\n` + payload bytes.
 */
export function decodeLease(file: string, rootPublicKey: string): DecodedLease {
  const lines = file.split('\n');
  expect(lines[0]).toBe('-----BEGIN TOLLGATE LEASE-----');
  expect(lines.at(-1)).toBe('');
  expect(lines.at(-2)).toBe('-----END TOLLGATE LEASE-----');
  const body = lines.slice(1, -2);
  for (const line of body.slice(0, -1)) expect(line).toMatch(/^[A-Za-z0-9_-]{64}$/);
  expect(body.at(-1)).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
  const envelope = JSON.parse(Buffer.from(body.join(''), 'base64url').toString('utf8')) as Record<string, unknown>;
  expect(Object.keys(envelope)).toEqual(['v', 'kid', 'cert', 'payload', 'sig']);
  expect(envelope.v).toBe(1);

  const cert = JSON.parse(Buffer.from(envelope.cert as string, 'base64url').toString('utf8')) as Record<string, unknown>;
  expect(Object.keys(cert).sort()).toEqual(['app_id', 'kid', 'not_after', 'not_before', 'public_key', 'sig', 'v']);
  const certified = Buffer.from(['tollgate/keycert/v1', cert.app_id, cert.kid, cert.public_key, cert.not_before, cert.not_after].join('\n'), 'utf8');
  expect(verify(null, certified, rawPublicKey(rootPublicKey), Buffer.from(cert.sig as string, 'base64url')), 'certificate verifies with the root').toBe(true);
  expect(cert.kid).toBe(envelope.kid);

  const payloadBytes = Buffer.from(envelope.payload as string, 'base64url');
  const signed = Buffer.concat([Buffer.from('tollgate/lease/v1\n', 'utf8'), payloadBytes]);
  const sig = Buffer.from(envelope.sig as string, 'base64url');
  expect(sig.length).toBe(64);
  expect(verify(null, signed, rawPublicKey(cert.public_key as string), sig), 'lease verifies with the certificate key').toBe(true);
  return { kid: envelope.kid as string, cert, payload: JSON.parse(payloadBytes.toString('utf8')), payloadBytes };
}

/** A 200 lease answer, decoded and verified. */
export function leaseOf(res: LightMyRequestResponse, rootPublicKey: string): DecodedLease {
  expect(res.statusCode, res.body).toBe(200);
  expect(res.headers['content-type']).toBe('application/x-tollgate-lease');
  return decodeLease(res.body, rootPublicKey);
}
