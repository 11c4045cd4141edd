/**
 * src/http/signed-answer.ts builds the signed bytes and the credential hash with less work than the reference
 * layouts of src/domain/signing/format.ts (which the SDKs' test vectors pin): they must give the same bytes for any
 * input, or every answer of one path would fail verification.
 */
import { generateKeyPairSync, sign } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CREDENTIAL_HEADERS, credentialHeadersSha256, responseInput, sha256Hex, signatureHeader } from '../src/domain/signing/format.js';
import type { SigningKey } from '../src/domain/signing/keys.js';
import { credentialsSha256, NO_BODY_SHA256, signatureOf } from '../src/http/signed-answer.js';

const { privateKey } = generateKeyPairSync('ed25519');
const key: SigningKey = { kid: 'kid_0123', appId: 'a', privateKey, certificate: 'c', notBefore: 0, notAfter: 1 };

/** A header value as Node hands it over: a latin1 string of the bytes received (no CR, LF or NUL). */
const headerValue = fc.uint8Array({ maxLength: 40 }).map((b) => Buffer.from(b.filter((x) => x !== 10 && x !== 13 && x !== 0)).toString('latin1'));

describe('signed-answer.ts against the reference layouts', () => {
  it('credentialsSha256 equals credentialHeadersSha256 over the raw bytes, for any present/absent, padded, non-ASCII or repeated values', () => {
    fc.assert(fc.property(fc.array(fc.option(fc.oneof(headerValue, fc.array(headerValue, { minLength: 1, maxLength: 3 })), { nil: undefined }), { minLength: 5, maxLength: 5 }), (values) => {
      const headers: Record<string, string | string[] | undefined> = {};
      CREDENTIAL_HEADERS.forEach((name, i) => {
        headers[name] = values[i];
      });
      const reference = credentialHeadersSha256((name) => {
        const v = headers[name];
        const first = Array.isArray(v) ? v[0] : v;
        return first === undefined ? undefined : Buffer.from(first, 'latin1');
      });
      expect(credentialsSha256(headers)).toBe(reference);
    }), { numRuns: 500 });
  });

  it('signatureOf signs responseInput\'s bytes and writes signatureHeader\'s value', () => {
    fc.assert(fc.property(fc.stringMatching(/^[A-Za-z0-9_-]{16,64}$/), fc.integer({ min: 0, max: 2 ** 45 }), fc.constantFrom(200, 401, 403, 422), fc.string(), (nonce, t, status, body) => {
      const a = { nonce, appId: '0190c0de-0000-7000-8000-000000000000', status, method: 'GET', target: '/app_context?x=é', requestBodySha256: NO_BODY_SHA256, credentialsSha256: sha256Hex('c'), responseLine: sha256Hex(body) };
      const expected = signatureHeader(key.kid, t, sign(null, responseInput({ kid: key.kid, t, ...a }), privateKey));
      expect(signatureOf(key, t, a)).toBe(expected);
    }), { numRuns: 100 });
  });
});
