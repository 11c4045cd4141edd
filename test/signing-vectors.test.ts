/**
 * The shared test vectors (sdk/test-vectors, written by a generator that
 * reads only docs/signing.md) against the server: its format functions
 * rebuild every vector's signed bytes, and since Ed25519 is deterministic,
 * signing them with the vector's seeds gives the vector's signatures byte for
 * byte. The verifier of the server's tests gives every response vector its
 * expected verdict.
 */
import { createHash, createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  certificateInput, credentialHeadersSha256, decodeCertificate, downloadLine, encodeCertificate, hwidHash, leaseFile, leaseInput, LEASE_BEGIN, LEASE_END,
  parseSignatureHeader, responseInput, sha256Hex,
} from '../src/domain/signing/format.js';
import { verifyAnswer } from './signing-test-verifier.js';

const read = (name: string) => JSON.parse(readFileSync(new URL(`../sdk/test-vectors/${name}.json`, import.meta.url), 'utf8'));
const keys = read('keys');
const responses = read('responses');
const certificates = read('certificates');
const leases = read('leases');
const b64 = (s: string | undefined) => Buffer.from(s ?? '', 'base64');

const PKCS8_ED25519 = '302e020100300506032b657004220420';
const privateFromSeed = (seedHex: string): KeyObject => createPrivateKey({ key: Buffer.from(PKCS8_ED25519 + seedHex, 'hex'), format: 'der', type: 'pkcs8' });
const publicFromRaw = (b64url: string): KeyObject =>
  createPublicKey({ key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), Buffer.from(b64url, 'base64url')]), format: 'der', type: 'spki' });
const signerOf = (kid: string): KeyObject | undefined => {
  const k = (keys.signing_keys as { kid: string; seed_hex: string }[]).find((x) => x.kid === kid);
  return k && privateFromSeed(k.seed_hex);
};

interface ResponseCase {
  name: string;
  request: { method: string; target: string; body_b64: string; nonce: string; app_id: string; headers: Record<string, string>; credentials_sha256: string };
  answer: { status: number; headers: Record<string, string>; body_b64: string };
  download?: { file_b64: string };
  retired: string[];
  expect: string;
}

/** A client sends header text as UTF-8; Node hands each byte over as one latin1 char (what the server and test verifier see). */
const asReceived = (headers: Record<string, string>): Record<string, string> =>
  Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, Buffer.from(v, 'utf8').toString('latin1')]));

/** The server's credential line: src/http/signing.ts reads each header's raw bytes. */
const serverCredentials = (c: ResponseCase): string =>
  credentialHeadersSha256((name) => (c.request.headers[name] === undefined ? undefined : Buffer.from(c.request.headers[name]!, 'utf8')));

/** The server's bytes for this answer, as src/http/signing.ts builds them. */
function serverInput(c: ResponseCase, kid: string, t: number): Buffer {
  const download = c.download !== undefined && (c.answer.status === 200 || c.answer.status === 206);
  return responseInput({
    kid, t, nonce: c.request.nonce, appId: c.request.app_id, status: c.answer.status, method: c.request.method, target: c.request.target,
    requestBodySha256: sha256Hex(b64(c.request.body_b64)),
    credentialsSha256: serverCredentials(c),
    responseLine: download ? downloadLine(sha256Hex(b64(c.download!.file_b64)), c.answer.headers['content-range']) : sha256Hex(b64(c.answer.body_b64)),
  });
}

describe('responses.json', () => {
  const cases = responses.cases as ResponseCase[];

  it.each(cases.map((c) => [c.name, c] as const))('%s: the test verifier gives the expected verdict', (_name, c) => {
    const v = verifyAnswer(
      { appId: c.request.app_id, rootPublicKey: responses.root_public_key, retired: new Set(c.retired) },
      { nonce: c.request.nonce, method: c.request.method, target: c.request.target, body: b64(c.request.body_b64), headers: asReceived(c.request.headers) },
      { status: c.answer.status, headers: c.answer.headers, body: b64(c.answer.body_b64), ...(c.download && { download: { file: b64(c.download.file_b64) } }) },
    );
    expect(v.verdict).toBe(c.expect);
    if (c.download && v.verdict === 'ok') expect(createHash('sha256').update(b64(c.download.file_b64)).digest('hex')).toBe(v.fileSha256);
  });

  it('the server hashes every request\'s credential headers as the vectors do (UTF-8 bytes, trimmed, in the documented order)', () => {
    for (const c of cases) expect(serverCredentials(c), c.name).toBe(c.request.credentials_sha256);
    expect(cases.filter((c) => Object.keys(c.request.headers).length > 0).length).toBeGreaterThanOrEqual(8);
  });

  it('every answer the vectors accept is, byte for byte, the signature the server would make with that key', () => {
    const accepted = cases.filter((c) => c.expect === 'ok' || c.expect === 'key_retired');
    expect(accepted.length).toBeGreaterThanOrEqual(8);
    for (const c of accepted) {
      const parsed = parseSignatureHeader(c.answer.headers['tollgate-signature']!);
      expect(parsed, c.name).not.toBeNull();
      const key = signerOf(parsed!.kid);
      expect(key, c.name).toBeDefined();
      expect(sign(null, serverInput(c, parsed!.kid, parsed!.t), key!).equals(parsed!.sig), c.name).toBe(true);
      expect(keys.certificates[parsed!.kid].certificate, c.name).toBe(c.answer.headers['tollgate-key-cert']);
    }
  });

  it('the server parses the signature header as the vectors do: every malformed one refused, every other one read', () => {
    for (const c of cases) {
      const header = c.answer.headers['tollgate-signature'];
      if (header === undefined) continue;
      expect(parseSignatureHeader(header) === null, c.name).toBe(c.expect === 'malformed_signature');
    }
  });

  it('a tampered answer does not verify over the bytes the server rebuilds from what was sent and received', () => {
    for (const c of cases.filter((x) => x.expect === 'bad_signature')) {
      const parsed = parseSignatureHeader(c.answer.headers['tollgate-signature']!)!;
      const cert = decodeCertificate(c.answer.headers['tollgate-key-cert']!)!;
      expect(verify(null, serverInput(c, parsed.kid, parsed.t), publicFromRaw(cert.public_key), parsed.sig), c.name).toBe(false);
    }
  });
});

describe('certificates.json and keys.json', () => {
  it('the server encodes each signing key certificate byte for byte, over the bytes the root signed', () => {
    const root = privateFromSeed(keys.root.seed_hex);
    for (const [kid, { fields, certificate }] of Object.entries(keys.certificates as Record<string, { fields: Parameters<typeof certificateInput>[0]; certificate: string }>)) {
      const sig = sign(null, certificateInput(fields), root).toString('base64url');
      expect(encodeCertificate({ v: 1, ...fields, sig }), kid).toBe(certificate);
      expect(decodeCertificate(certificate), kid).toEqual({ v: 1, ...fields, sig });
    }
  });

  it('every certificate the vectors accept (or refuse only for its app or time) decodes and its root signature verifies', () => {
    const rootPublic = publicFromRaw(certificates.root_public_key);
    for (const c of certificates.cases as { name: string; certificate: string; expect: string }[]) {
      if (c.expect === 'bad_certificate') continue;
      const d = decodeCertificate(c.certificate);
      expect(d, c.name).not.toBeNull();
      expect(encodeCertificate(d!), c.name).toBe(c.certificate);
      expect(verify(null, certificateInput(d!), rootPublic, Buffer.from(d!.sig, 'base64url')), c.name).toBe(true);
    }
  });
});

describe('leases.json', () => {
  it('each accepted lease is the file the server would write, signed with the same bytes and hashing the hardware id alike', () => {
    const ok = (leases.cases as { name: string; lease: string; hardware_id: string; expect: string }[]).filter((c) => c.expect === 'ok');
    expect(ok.length).toBeGreaterThan(0);
    for (const c of ok) {
      const text = c.lease.replace(/\r\n/g, '\n');
      const lines = text.trim().split('\n');
      expect([lines[0], lines.at(-1)], c.name).toEqual([LEASE_BEGIN, LEASE_END]);
      const lease = JSON.parse(Buffer.from(lines.slice(1, -1).join(''), 'base64url').toString('utf8'));
      expect(leaseFile(lease), c.name).toBe(text);
      const payloadBytes = Buffer.from(lease.payload, 'base64url');
      expect(sign(null, leaseInput(payloadBytes), signerOf(lease.kid)!).toString('base64url'), c.name).toBe(lease.sig);
      const payload = JSON.parse(payloadBytes.toString('utf8'));
      expect(hwidHash(payload.app_id, c.hardware_id), c.name).toBe(payload.hwid_hash);
    }
  });
});
