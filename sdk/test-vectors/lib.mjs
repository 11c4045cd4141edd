/**
 * The byte layouts of docs/signing.md, written again from the document alone
 * (never imported from src/): the server's tests and every SDK check these
 * vectors, so a layout bug on one side shows up as a mismatch on the other.
 */
import { createHash, createPrivateKey, createPublicKey, sign } from 'node:crypto';

export const DAY = 24 * 3600 * 1000;
export const MAX_VALIDITY = 90 * DAY;

export const b64url = (bytes) => Buffer.from(bytes).toString('base64url');
export const utf8 = (text) => Buffer.from(text, 'utf8');
export const sha256Hex = (bytes) => createHash('sha256').update(bytes).digest('hex');

/** A fixed 32-byte seed from a label, so every run writes the same files. */
export const seedOf = (label) => createHash('sha256').update(`tollgate/test-vectors/${label}`).digest();

/** An Ed25519 key pair from a 32-byte seed: PKCS#8 is a fixed 16-byte prefix followed by the seed. */
export function keyPair(label) {
  const seed = seedOf(label);
  const privateKey = createPrivateKey({ key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]), format: 'der', type: 'pkcs8' });
  const spki = createPublicKey(privateKey).export({ format: 'der', type: 'spki' });
  const publicRaw = spki.subarray(spki.length - 32);
  return { label, seed, privateKey, publicRaw, publicKey: b64url(publicRaw) };
}

/** Ed25519 is deterministic: the same key and bytes always give the same signature. */
export const ed25519 = (pair, bytes) => sign(null, bytes, pair.privateKey);

/** `tollgate/keycert/v1` and the five fields, one per line. */
export const certificateInput = (c) => utf8(['tollgate/keycert/v1', c.app_id, c.kid, c.public_key, String(c.not_before), String(c.not_after)].join('\n'));

/** base64url of the JSON object in the documented field order. */
export const encodeJson = (object) => b64url(utf8(JSON.stringify(object)));

export function certify(root, fields) {
  const sig = b64url(ed25519(root, certificateInput(fields)));
  return { v: 1, app_id: fields.app_id, kid: fields.kid, public_key: fields.public_key, not_before: fields.not_before, not_after: fields.not_after, sig };
}

/** The 10 signed lines of an answer. */
export const responseInput = (r) =>
  utf8(['tollgate/response/v1', r.kid, String(r.t), r.nonce, r.appId, String(r.status), `${r.method} ${r.target}`, r.requestBodySha256, r.credentialsSha256, r.responseLine].join('\n'));

/** The credential headers, in the order they are hashed. */
export const CREDENTIAL_HEADERS = ['authorization', 'x-api-license-code', 'x-api-username', 'x-api-password', 'x-hardware-id'];

/**
 * Hex SHA-256 of the request's credential headers: `name:value\n` for each one present, in
 * CREDENTIAL_HEADERS order, the value's bytes with leading and trailing spaces and tabs removed.
 * `headers` by any-case name; `encoding` says what a string value's chars are: 'utf8' for text
 * (a client's view), 'latin1' for one byte per char (what Node's HTTP parser hands a proxy).
 */
export function credentialsSha256(headers = {}, encoding = 'utf8') {
  const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), Array.isArray(v) ? v[0] : v]));
  const parts = [];
  for (const name of CREDENTIAL_HEADERS) {
    const value = lower[name];
    if (value === undefined) continue;
    parts.push(utf8(`${name}:`), Buffer.from(String(value).replace(/^[ \t]+|[ \t]+$/g, ''), encoding), utf8('\n'));
  }
  return sha256Hex(Buffer.concat(parts));
}

export const downloadLine = (fileSha256, contentRange) => `file-sha256=${fileSha256}; content-range=${contentRange ?? ''}`;

export const signatureHeader = (kid, t, sig) => `v1; kid=${kid}; t=${t}; sig=${b64url(sig)}`;

export const hwidHash = (appId, hardwareId) => sha256Hex(utf8(`${appId}\n${hardwareId}`));

export const leaseInput = (payloadBytes) => Buffer.concat([utf8('tollgate/lease/v1\n'), payloadBytes]);

/** The armoured lease file: base64url of {v, kid, cert, payload, sig} wrapped at 64 characters. */
export function leaseFile(lease, newline = '\n') {
  const body = encodeJson(lease);
  return ['-----BEGIN TOLLGATE LEASE-----', ...body.match(/.{1,64}/g), '-----END TOLLGATE LEASE-----', ''].join(newline);
}
