/**
 * A client-side verifier of signed answers, written from docs/signing.md
 * alone (on purpose it imports nothing from src/): if the server drifted from
 * the contract, its own format functions would drift with it, and only an
 * independent reading of the document catches that. The server's tests use
 * it; the SDK has its own.
 */
import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';

export type Verdict =
  | 'missing_signature'
  | 'malformed_signature'
  | 'bad_certificate'
  | 'wrong_app'
  | 'kid_mismatch'
  | 'key_retired'
  | 'key_expired'
  | 'bad_signature'
  | 'ok';

/** What the client pinned: its app id and the app's public root key (base64url of 32 raw bytes). */
export interface Pin {
  appId: string;
  rootPublicKey: string;
  /** Retired kids the client has learned. */
  retired?: ReadonlySet<string>;
}

/** The request as the client sent it. */
export interface SentRequest {
  nonce: string;
  method: string;
  /** Path and query as on the request line. */
  target: string;
  body?: Uint8Array | string;
  /**
   * The request's headers as sent (any case; other headers ignored): the credential headers among
   * them are hashed into the signed bytes. A string value stands for its bytes one char each (latin1),
   * as Node and light-my-request carry header bytes. Absent: the request carried no credential header.
   */
  headers?: Record<string, string | undefined>;
}

/** The answer as the client received it. */
export interface ReceivedAnswer {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  /** The body bytes; ignored for a download's 200/206 (see `download`). */
  body?: Uint8Array | string;
  /**
   * A download's 200/206: the signed line is `file-sha256=…; content-range=…`. With the whole file
   * assembled (`{file}`), its hash goes into that line; with only the headers (`true`), the hash the
   * ETag announces does, and the caller checks the assembled bytes against `fileSha256` afterwards.
   */
  download?: boolean | { file: Uint8Array };
}

export interface Verification {
  verdict: Verdict;
  kid?: string;
  t?: number;
  /** For a download: the file hash the signature vouches for. */
  fileSha256?: string;
}

const NINETY_DAYS_MS = 90 * 24 * 3600 * 1000;
const sha256 = (b: Uint8Array | string): string => createHash('sha256').update(b).digest('hex');
/** A repeated header is joined with ", " as fetch() does, so two signatures or two certificates are refused, never picked from. */
const single = (v: string | string[] | number | undefined): string | undefined => (Array.isArray(v) ? v.join(', ') : v === undefined ? undefined : String(v));

/** docs/signing.md: the credential headers, in this order, as `name:value\n` with the value's bytes trimmed of spaces and tabs. */
const CREDENTIAL_HEADERS = ['authorization', 'x-api-license-code', 'x-api-username', 'x-api-password', 'x-hardware-id'];

export function credentialsHash(headers: Record<string, string | undefined> = {}): string {
  const lower = new Map(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  const h = createHash('sha256');
  for (const name of CREDENTIAL_HEADERS) {
    const value = lower.get(name);
    if (value === undefined) continue;
    h.update(`${name}:`).update(Buffer.from(value.replace(/^[ \t]+|[ \t]+$/g, ''), 'latin1')).update('\n');
  }
  return h.digest('hex');
}

function ed25519Public(raw: Buffer): KeyObject | null {
  if (raw.length !== 32) return null;
  try {
    // SPKI DER of an Ed25519 key: the fixed prefix 302a300506032b6570032100, then the 32 raw bytes.
    return createPublicKey({ key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), raw]), format: 'der', type: 'spki' });
  } catch {
    return null;
  }
}

const B64URL = /^[A-Za-z0-9_-]*$/;

interface Cert { app_id: string; kid: string; public_key: string; not_before: number; not_after: number; sig: string }

function decodeCert(encoded: string): Cert | null {
  if (!B64URL.test(encoded)) return null;
  let o: unknown;
  try {
    o = JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (!o || typeof o !== 'object' || Array.isArray(o)) return null;
  const c = o as Record<string, unknown>;
  if (Object.keys(c).sort().join(',') !== 'app_id,kid,not_after,not_before,public_key,sig,v' || c.v !== 1) return null;
  if ([c.app_id, c.kid, c.public_key, c.sig].some((x) => typeof x !== 'string')) return null;
  if (![c.not_before, c.not_after].every((x) => Number.isSafeInteger(x))) return null;
  return c as unknown as Cert;
}

/** Checks an answer in the order of docs/signing.md; the first failure is the verdict. */
export function verifyAnswer(pin: Pin, req: SentRequest, res: ReceivedAnswer): Verification {
  const header = single(res.headers['tollgate-signature']);
  const certHeader = single(res.headers['tollgate-key-cert']);
  if (header === undefined || certHeader === undefined) return { verdict: 'missing_signature' };

  const m = /^v1; kid=([^;]*); t=([^;]*); sig=([^;]*)$/.exec(header);
  if (!m || !/^[A-Za-z0-9_-]{1,64}$/.test(m[1]!) || !/^\d+$/.test(m[2]!) || !B64URL.test(m[3]!)) return { verdict: 'malformed_signature' };
  const kid = m[1]!;
  const t = Number(m[2]);
  const sig = Buffer.from(m[3]!, 'base64url');
  if (sig.length !== 64 || !Number.isSafeInteger(t)) return { verdict: 'malformed_signature' };

  const cert = decodeCert(certHeader);
  const root = ed25519Public(Buffer.from(pin.rootPublicKey, 'base64url'));
  if (!cert || !root) return { verdict: 'bad_certificate', kid, t };
  const certBytes = Buffer.from(['tollgate/keycert/v1', cert.app_id, cert.kid, cert.public_key, String(cert.not_before), String(cert.not_after)].join('\n'), 'utf8');
  const signingKey = B64URL.test(cert.public_key) ? ed25519Public(Buffer.from(cert.public_key, 'base64url')) : null;
  if (!B64URL.test(cert.sig) || !verify(null, certBytes, root, Buffer.from(cert.sig, 'base64url')) || !signingKey) return { verdict: 'bad_certificate', kid, t };
  if (cert.app_id !== pin.appId) return { verdict: 'wrong_app', kid, t };
  if (cert.kid !== kid) return { verdict: 'kid_mismatch', kid, t };
  if (pin.retired?.has(kid)) return { verdict: 'key_retired', kid, t };
  if (t < cert.not_before || t > cert.not_after || cert.not_after - cert.not_before > NINETY_DAYS_MS || cert.not_after <= cert.not_before) return { verdict: 'key_expired', kid, t };

  let lastLine: string;
  let fileSha256: string | undefined;
  if (res.download && (res.status === 200 || res.status === 206)) {
    fileSha256 = typeof res.download === 'object' ? sha256(res.download.file) : (/^"([0-9a-f]{64})"$/.exec(single(res.headers.etag) ?? '')?.[1] ?? '');
    lastLine = `file-sha256=${fileSha256}; content-range=${single(res.headers['content-range']) ?? ''}`;
  } else {
    lastLine = sha256(res.body ?? '');
  }
  const signed = Buffer.from(
    ['tollgate/response/v1', kid, String(t), req.nonce, pin.appId, String(res.status), `${req.method} ${req.target}`, sha256(req.body ?? ''), credentialsHash(req.headers), lastLine].join('\n'),
    'utf8',
  );
  if (!verify(null, signed, signingKey, sig)) return { verdict: 'bad_signature', kid, t };
  return { verdict: 'ok', kid, t, ...(fileSha256 !== undefined && { fileSha256 }) };
}

// ---------------------------------------------------------------- test glue (in-process answers)

export interface SignedCall {
  req: SentRequest;
  res: ReceivedAnswer & { statusCode: number; rawPayload: Buffer; json(): any };
}

let nonceCounter = 0;
/** A fresh nonce per request, as an SDK sends: 32 characters of the allowed alphabet. */
export const freshNonce = (): string => `n${process.pid}_${Date.now()}_${++nonceCounter}`.padEnd(32, 'x');

/**
 * One client request through `inject`, with exact body bytes and (unless `nonce: null`) a fresh nonce;
 * what the client sent and received, ready for verifyAnswer.
 */
export async function call(
  inject: (opts: import('fastify').InjectOptions) => Promise<import('fastify').LightMyRequestResponse>,
  appHeaders: Record<string, string>,
  method: string,
  target: string,
  opts: { body?: string | Buffer; headers?: Record<string, string>; nonce?: string | null; download?: boolean } = {},
): Promise<SignedCall> {
  const nonce = opts.nonce === undefined ? freshNonce() : opts.nonce;
  const headers: Record<string, string> = { ...appHeaders, ...opts.headers, ...(nonce !== null && { 'tollgate-nonce': nonce }) };
  if (opts.body !== undefined && headers['content-type'] === undefined) headers['content-type'] = 'application/json';
  const r = await inject({ method: method as 'GET', url: target, headers, ...(opts.body !== undefined && { payload: opts.body }) });
  return {
    req: { nonce: nonce ?? '', method, target, headers, ...(opts.body !== undefined && { body: opts.body }) },
    res: { status: r.statusCode, statusCode: r.statusCode, headers: r.headers, body: r.rawPayload, rawPayload: r.rawPayload, json: () => r.json(), download: opts.download ?? false },
  };
}
