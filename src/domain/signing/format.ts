/**
 * The byte layouts of docs/signing.md: what a root key, a signing key and a
 * lease sign. SDKs rebuild the same bytes; sdk/test-vectors pins them. Never
 * change a v1 layout: make a v2.
 */
import { createHash, hash } from 'node:crypto';

export const MAX_CERT_VALIDITY_MS = 90 * 24 * 3600 * 1000;
export const NONCE = /^[A-Za-z0-9_-]{16,64}$/;
/** A kid: the one definition, used by the routes' schemas and the API document too. */
export const KID_CHARS = '[A-Za-z0-9_-]{1,64}';
export const KID_PATTERN = `^${KID_CHARS}$`;
export const LEASE_BEGIN = '-----BEGIN TOLLGATE LEASE-----';
export const LEASE_END = '-----END TOLLGATE LEASE-----';

export const b64url = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64url');
/** One-shot (as tokens.ts digest): a third of createHash's cost, and a signed answer hashes twice. */
export const sha256Hex = (bytes: Uint8Array | string): string => hash('sha256', bytes, 'hex');

export interface CertificateFields {
  app_id: string;
  kid: string;
  /** base64url of the 32 raw bytes of the Ed25519 public key. */
  public_key: string;
  not_before: number;
  not_after: number;
}

export interface Certificate extends CertificateFields {
  v: 1;
  /** base64url of the root key's Ed25519 signature over certificateInput(). */
  sig: string;
}

export function certificateInput(c: CertificateFields): Buffer {
  return Buffer.from(['tollgate/keycert/v1', c.app_id, c.kid, c.public_key, String(c.not_before), String(c.not_after)].join('\n'), 'utf8');
}

/** The certificate as sent in `Tollgate-Key-Cert`, a lease's `cert` and the admin API. */
export function encodeCertificate(c: Certificate): string {
  const { v, app_id, kid, public_key, not_before, not_after, sig } = c;
  return b64url(Buffer.from(JSON.stringify({ v, app_id, kid, public_key, not_before, not_after, sig }), 'utf8'));
}

/**
 * Parses an encoded certificate, refusing extra or missing fields and wrong types; null if it is not one.
 * Strict base64url (the alphabet only, and the canonical encoding of the bytes it decodes to): Node's
 * decoder skips `=`, `.` and other stray characters, every SDK refuses them, so a certificate accepted
 * here with one would make every answer fail verification (bad_certificate) on every client.
 */
export function decodeCertificate(encoded: string): Certificate | null {
  if (!/^[A-Za-z0-9_-]+$/.test(encoded) || Buffer.from(encoded, 'base64url').toString('base64url') !== encoded) return null;
  let c: unknown;
  try {
    c = JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (!c || typeof c !== 'object' || Array.isArray(c)) return null;
  const o = c as Record<string, unknown>;
  const keys = Object.keys(o).sort().join(',');
  if (keys !== 'app_id,kid,not_after,not_before,public_key,sig,v' || o.v !== 1) return null;
  for (const k of ['app_id', 'kid', 'public_key', 'sig'] as const) if (typeof o[k] !== 'string') return null;
  for (const k of ['not_before', 'not_after'] as const) if (!Number.isSafeInteger(o[k])) return null;
  return o as unknown as Certificate;
}

export interface ResponseSigningInput {
  kid: string;
  t: number;
  nonce: string;
  appId: string;
  status: number;
  method: string;
  /** Path and query exactly as on the request line. */
  target: string;
  requestBodySha256: string;
  /** Hex SHA-256 of the request's credential headers (credentialHeadersSha256): binds the answer to the user asked about. */
  credentialsSha256: string;
  /** Hex SHA-256 of the response body, or for a download's 200/206 the `file-sha256=…; content-range=…` line. */
  responseLine: string;
}

export function responseInput(r: ResponseSigningInput): Buffer {
  return Buffer.from(
    ['tollgate/response/v1', r.kid, String(r.t), r.nonce, r.appId, String(r.status), `${r.method} ${r.target}`, r.requestBodySha256, r.credentialsSha256, r.responseLine].join('\n'),
    'utf8',
  );
}

/**
 * The request headers that say who the user is, in the order they are hashed
 * (docs/signing.md, amendment A). Without them in the signed bytes, a proxy
 * could swap a paying user's credentials in under a free user's nonce and
 * hand back the paying user's (validly signed) answer or lease.
 */
export const CREDENTIAL_HEADERS = ['authorization', 'x-api-license-code', 'x-api-username', 'x-api-password', 'x-hardware-id'] as const;

/**
 * Hex SHA-256 over `name:value\n` for each credential header present, in
 * CREDENTIAL_HEADERS order; the value's raw bytes with leading and trailing
 * spaces and tabs removed (as HTTP parsers do). `raw` gives a header's bytes,
 * or undefined when the request does not carry it. No header: the empty hash.
 */
export function credentialHeadersSha256(raw: (name: string) => Uint8Array | undefined): string {
  const h = createHash('sha256');
  for (const name of CREDENTIAL_HEADERS) {
    const value = raw(name);
    if (value === undefined) continue;
    h.update(`${name}:`, 'latin1').update(trimOws(value)).update('\n', 'latin1');
  }
  return h.digest('hex');
}

/** Trims spaces and tabs on the bytes (never decoding: a value's bytes are hashed exactly). */
function trimOws(b: Uint8Array): Uint8Array {
  let start = 0;
  let end = b.length;
  while (start < end && (b[start] === 0x20 || b[start] === 0x09)) start++;
  while (end > start && (b[end - 1] === 0x20 || b[end - 1] === 0x09)) end--;
  return b.subarray(start, end);
}

/** The last signed line of a download's 200 or 206. */
export const downloadLine = (fileSha256: string, contentRange: string | undefined): string => `file-sha256=${fileSha256}; content-range=${contentRange ?? ''}`;

export const signatureHeader = (kid: string, t: number, sig: Uint8Array): string => `v1; kid=${kid}; t=${t}; sig=${b64url(sig)}`;

const SIGNATURE_HEADER = new RegExp(`^v1; kid=(${KID_CHARS}); t=(\\d{1,16}); sig=([A-Za-z0-9_-]{86})$`);

/** Parses `v1; kid=…; t=…; sig=…` (those four, in that order); null if malformed. Used by the server's tests. */
export function parseSignatureHeader(value: string): { kid: string; t: number; sig: Buffer } | null {
  const m = SIGNATURE_HEADER.exec(value);
  if (!m) return null;
  const sig = Buffer.from(m[3]!, 'base64url');
  return sig.length === 64 ? { kid: m[1]!, t: Number(m[2]), sig } : null;
}

export const hwidHash = (appId: string, hardwareId: string): string => sha256Hex(`${appId}\n${hardwareId}`);

export interface LeasePayload {
  lease_id: string;
  seq: number;
  app_id: string;
  user_id: string;
  hwid_hash: string;
  is_lifetime: boolean;
  active_until: number | null;
  iat: number;
  renew_after: number;
  exp: number;
  max_offline_runtime_s: number;
  /**
   * Issue 24: the live entitlements at iat, by code, `until` the latest end of that code's grants (null: never).
   * Both fields, or neither for a user without entitlements or a trial: an SDK of before issue 24 refuses a
   * payload with fields it does not know, so such a user keeps the payload those SDKs verify.
   */
  entitlements?: { code: string; until: number | null }[];
  is_trial?: boolean;
}

export const leaseInput = (payloadBytes: Uint8Array): Buffer => Buffer.concat([Buffer.from('tollgate/lease/v1\n', 'utf8'), payloadBytes]);

/** The lease file: armour around base64url of {v, kid, cert, payload, sig}, wrapped at 64 characters. */
export function leaseFile(lease: { kid: string; cert: string; payload: string; sig: string }): string {
  const body = b64url(Buffer.from(JSON.stringify({ v: 1, kid: lease.kid, cert: lease.cert, payload: lease.payload, sig: lease.sig }), 'utf8'));
  return [LEASE_BEGIN, ...(body.match(/.{1,64}/g) ?? []), LEASE_END, ''].join('\n');
}
