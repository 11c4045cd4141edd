/**
 * One signed exchange with the server: a fresh nonce, the exact bytes sent,
 * and the answer verified (docs/signing.md) before anything reads its body.
 * Also what the client learns from verified answers: the server's time, new
 * and retired kids, and the codes that drop an offline lease.
 */
import { newNonce, sha256Hex } from './crypto.js';
import { utf8 } from './encoding.js';
import { TollgateError, TollgateVerificationError } from './errors.js';
import type { Memory } from './memory.js';
import { credentialHeadersSha256, parseSignatureHeader, verifyAnswer, type SignedRequest } from './verify.js';
import type { Pinned } from './certificate.js';

export interface Clock {
  /** Wall clock, unix ms. */
  now(): number;
  /** A monotonic clock in ms (performance.now()): offline runtime is measured with it. */
  monotonic(): number;
}

export interface TransportOptions {
  baseUrl: string;
  appKey: string;
  appSecret: string;
  pinned: Pinned;
  clock: Clock;
  fetch: typeof fetch;
  /** How often the key list is fetched when no unknown kid forces it (default: daily). */
  keyRefreshMs: number;
}

export interface Outgoing {
  method: 'GET' | 'POST';
  /** Path and query, e.g. `/app_context`. */
  path: string;
  json?: unknown;
  headers?: Record<string, string>;
  /** A user-authenticated request whose refusal may drop the offline lease (docs/signing.md). */
  dropsLease?: boolean;
}

export interface KeyList {
  keys: { kid: string; certificate: string; status: string }[];
  retired: string[];
}

export interface Verified {
  status: number;
  headers: Headers;
  body: Uint8Array;
  t: number;
}

/** The verified refusals that tell the SDK to drop its lease: a ban, a revoked license, a deleted user, a device reset. */
export const DROP_CODES: ReadonlySet<string> = new Set(['banned', 'membership_inactive', 'invalid_credentials', 'invalid_license', 'device_mismatch', 'device_limit']);

/** How far apart the server's nodes' clocks may be. */
const SERVER_CLOCK_TOLERANCE_MS = 5 * 60_000;

/** An unknown kid is looked up at most this often. */
const UNKNOWN_KID_REFRESH_GAP_MS = 60_000;

export class Transport {
  /** Unknown kids already looked up, and when (monotonic): one lookup per kid a minute, so an emulator cannot make us loop. */
  private lookedUp = new Map<string, number>();
  private refreshing = false;

  constructor(private readonly o: TransportOptions, private readonly memory: Memory) {}

  /** Sends the request; returns the answer once verified; throws TollgateVerificationError or, for a verified error, TollgateError. */
  async send(req: Outgoing): Promise<Verified> {
    const { response, sent } = await this.fetch(req);
    const body = new Uint8Array(await response.arrayBuffer());
    const answer = await this.verify(sent, response, await sha256Hex(body));
    const verified = { status: response.status, headers: response.headers, body, t: answer.t };
    if (response.status >= 400) await this.refuse(req, verified);
    return verified;
  }

  /** Sends the request and returns the response unread (downloads), with what was sent for a later verify(). */
  async fetch(req: Outgoing): Promise<{ response: Response; sent: SignedRequest }> {
    const url = new URL(this.o.baseUrl.replace(/\/+$/, '') + req.path);
    const body = req.json === undefined ? new Uint8Array(0) : utf8(JSON.stringify(req.json));
    const nonce = newNonce();
    const headers: Record<string, string> = {
      'x-api-key': this.o.appKey,
      'x-api-secret': this.o.appSecret,
      'tollgate-nonce': nonce,
      ...(req.json !== undefined && { 'content-type': 'application/json' }),
      ...req.headers,
    };
    // Exactly the credential headers this request carries: the answer must be for them, not for a user a proxy swapped in.
    const sent: SignedRequest = { method: req.method, target: url.pathname + url.search, body, nonce, credentialsSha256: await credentialHeadersSha256(headers) };
    // No redirects followed: another target would not be what we sign over, and a 3xx from a proxy is unsigned anyway.
    const response = await this.o.fetch(url, { method: req.method, headers, body: req.json === undefined ? undefined : (body as BodyInit), redirect: 'manual' });
    return { response, sent };
  }

  /** Verifies an answer (steps 1–8) and records what a verified answer teaches; throws on any failure. */
  async verify(sent: SignedRequest, response: Response, responseLine: string): Promise<{ t: number; kid: string }> {
    const signature = response.headers.get('tollgate-signature');
    const certificate = response.headers.get('tollgate-key-cert');
    const kid = signature === null ? undefined : parseSignatureHeader(signature)?.kid;
    if (kid !== undefined && !(await this.memory.read()).state.known.includes(kid)) await this.refreshKeys(kid);
    const { state } = await this.memory.read();
    const check = await verifyAnswer(this.o.pinned, new Set(state.retired), sent, { status: response.status, signature, certificate, responseLine });
    if (check.verdict !== 'ok') throw new TollgateVerificationError(check.verdict, response.status);
    // Beyond the contract's steps: an ended key that signs a back-dated `t` (a leaked old private key) is still
    // expired once we have seen the server's time past its end. Tolerance: several nodes' clocks differ a little.
    if (check.notAfter! < state.max_server_time - SERVER_CLOCK_TOLERANCE_MS) throw new TollgateVerificationError('key_expired', response.status);
    await this.learn(check.t!, check.kid!);
    return { t: check.t!, kid: check.kid! };
  }

  private async learn(t: number, kid: string): Promise<void> {
    const now = this.o.clock.now();
    this.memory.lastTick = undefined; // time spent online is not offline runtime
    const { state } = await this.memory.read();
    const newKid = !state.known.includes(kid);
    await this.memory.update(
      (s) => {
        // The server's time, from an answer to our own fresh nonce: the best clock there is.
        s.highest_trusted_time = t;
        s.max_server_time = Math.max(s.max_server_time, t);
        s.clock_offset_ms = t - now;
        if (newKid) s.known.push(kid);
      },
      { lazy: !newKid },
    );
    if (now - state.keys_fetched_at >= this.o.keyRefreshMs) await this.refreshKeys();
  }

  /** GET /signing_keys: learns the retired kids (the set only grows) and the current ones. Throws like any call. */
  async fetchKeyList(): Promise<KeyList> {
    const wasRefreshing = this.refreshing;
    this.refreshing = true; // the key list's own answer must not trigger another refresh
    try {
      await this.memory.update((s) => void (s.keys_fetched_at = this.o.clock.now()));
      const res = await this.send({ method: 'GET', path: '/signing_keys' });
      const list = JSON.parse(new TextDecoder().decode(res.body)) as KeyList;
      await this.memory.update((s) => {
        for (const kid of list.retired) if (!s.retired.includes(kid)) s.retired.push(kid);
        for (const k of list.keys) if (!s.known.includes(k.kid)) s.known.push(k.kid);
      });
      return list;
    } finally {
      this.refreshing = wasRefreshing;
    }
  }

  /** The refresh done on the way: on an unknown kid (at most once a minute) or when the daily one is due. */
  private async refreshKeys(unknownKid?: string): Promise<void> {
    if (this.refreshing) return;
    if (unknownKid !== undefined) {
      const mono = this.o.clock.monotonic();
      if (mono - (this.lookedUp.get(unknownKid) ?? -Infinity) < UNKNOWN_KID_REFRESH_GAP_MS) return;
      if (this.lookedUp.size >= 64) this.lookedUp.clear();
      this.lookedUp.set(unknownKid, mono);
    }
    try {
      await this.fetchKeyList();
    } catch (err) {
      // Unreachable or refused: verification goes on with what we know. A forged key list is never ignored.
      if (err instanceof TollgateVerificationError) throw err;
    }
  }

  /** A verified error answer: maybe drop the lease, then throw it as a TollgateError. */
  async refuse(req: Outgoing, answer: Verified): Promise<never> {
    let parsed: { code?: unknown; detail?: unknown; errors?: unknown } = {};
    try {
      parsed = JSON.parse(new TextDecoder().decode(answer.body));
    } catch {}
    const code = typeof parsed.code === 'string' ? parsed.code : 'unknown_error';
    if (req.dropsLease && DROP_CODES.has(code)) await this.memory.update((s) => void (s.dropped = true));
    throw new TollgateError(answer.status, code, typeof parsed.detail === 'string' ? parsed.detail : '', Array.isArray(parsed.errors) ? parsed.errors : undefined);
  }
}
