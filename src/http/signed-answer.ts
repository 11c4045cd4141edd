import type { IncomingHttpHeaders } from 'node:http';
import { keptWith } from '../domain/cache.js';
import { ed25519 } from '../domain/signing/ed25519.js';
import { sha256Hex } from '../domain/signing/format.js';
import type { SigningKey } from '../domain/signing/keys.js';

/**
 * The signature of an answer (docs/signing.md, "Signed answers"), as both
 * paths make it: the route's onSend hook (signing.ts) and GET /app_context's
 * fast path (fast-path.ts), byte for byte the same layouts as
 * responseInput, credentialHeadersSha256 and signatureHeader of
 * src/domain/signing/format.ts (test/signed-answer.test.ts holds them to it),
 * built with less work: one string and one buffer for the signed bytes, one
 * one-shot SHA-256 of the credential headers, the per-key start of the signed
 * bytes and of the header made once per key.
 */

/** The request body's hash when there is none (a GET). */
export const NO_BODY_SHA256 = sha256Hex(new Uint8Array(0));

/** What is signed besides the key and the clock. */
export interface AnswerToSign {
  nonce: string;
  appId: string;
  status: number;
  method: string;
  /** Path and query exactly as on the request line. */
  target: string;
  requestBodySha256: string;
  credentialsSha256: string;
  /** Hex SHA-256 of the body as sent, or a download's file line. */
  responseLine: string;
}

interface KeyPrefixes {
  /** `tollgate/response/v1\n<kid>\n` */
  input: string;
  /** `v1; kid=<kid>; t=` */
  header: string;
}

/** Made once per key object (a key ring reload makes new ones; the old ones go with it). */
const prefixesOf = keptWith((key: SigningKey): KeyPrefixes => ({ input: `tollgate/response/v1\n${key.kid}\n`, header: `v1; kid=${key.kid}; t=` }));

/** The Tollgate-Signature value of an answer: one Ed25519 signature over responseInput's bytes. */
export function signatureOf(key: SigningKey, t: number, a: AnswerToSign): string {
  const p = prefixesOf(key);
  const input = `${p.input}${t}\n${a.nonce}\n${a.appId}\n${a.status}\n${a.method} ${a.target}\n${a.requestBodySha256}\n${a.credentialsSha256}\n${a.responseLine}`;
  // The signer gives a Buffer of its own: encoded as it is (b64url would copy it into another first).
  return `${p.header}${t}; sig=${ed25519.sign(Buffer.from(input, 'utf8'), key.privateKey).toString('base64url')}`;
}

/**
 * credentialHeadersSha256 of a request's headers as Node parsed them (latin1
 * strings, the bytes as received; the first of repeated ones): one string of
 * the `name:value\n` lines, hashed once. Latin1 strings give back their bytes
 * exactly, and all-ASCII ones (nearly always) are hashed as they are.
 */
export function credentialsSha256(h: IncomingHttpHeaders): string {
  let lines = '';
  const authorization = first(h.authorization);
  if (authorization !== undefined) lines += `authorization:${trimOws(authorization)}\n`;
  const licenseCode = first(h['x-api-license-code']);
  if (licenseCode !== undefined) lines += `x-api-license-code:${trimOws(licenseCode)}\n`;
  const username = first(h['x-api-username']);
  if (username !== undefined) lines += `x-api-username:${trimOws(username)}\n`;
  const password = first(h['x-api-password']);
  if (password !== undefined) lines += `x-api-password:${trimOws(password)}\n`;
  const hardwareId = first(h['x-hardware-id']);
  if (hardwareId !== undefined) lines += `x-hardware-id:${trimOws(hardwareId)}\n`;
  return sha256Hex(ASCII.test(lines) ? lines : Buffer.from(lines, 'latin1'));
}

const ASCII = /^[\x00-\x7f]*$/;

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** Spaces and tabs off both ends (as credentialHeadersSha256 trims the bytes). */
function trimOws(value: string): string {
  const n = value.length;
  if (n === 0) return value;
  const a = value.charCodeAt(0);
  const z = value.charCodeAt(n - 1);
  if (a !== 0x20 && a !== 0x09 && z !== 0x20 && z !== 0x09) return value;
  return value.replace(/^[ \t]+|[ \t]+$/g, '');
}
