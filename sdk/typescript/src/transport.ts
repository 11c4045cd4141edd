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
  /** A floor for the highest server time (unix ms): the SDK's release time or the app's `notBefore` (amendment F). */
  serverTimeFloor: number;
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

/** An unknown kid is looked up at most this often, and a failed key-list fetch retried after this long. */
const UNKNOWN_KID_REFRESH_GAP_MS = 60_000;
/** At most this many key-list fetches a minute for unknown kids, however many an emulator invents. */
const UNKNOWN_KID_LOOKUPS_PER_MINUTE = 4;
/**
 * Amendment D: once an answer signed by a newer key (later not_before) has verified, answers signed by older
 * keys are refused this long after it: every node signs with the new key within the cache TTL (1 s), so an
 * older key after that is a leaked one, even when a proxy blocks GET /signing_keys so its retirement is unseen.
 */
export const OLDER_KEY_GRACE_MS = 10 * 60_000;

export class Transport {
  /** Unknown kids looked up in the last minute, and when (monotonic): one lookup per kid a minute. */
  private lookedUp = new Map<string, number>();
  /** No key-list fetch on the way before this (monotonic): set a minute ahead by a failed one. */
  private retryAt = -Infinity;
  private refreshing = false;

  constructor(private readonly o: TransportOptions, private readonly memory: Memory) {}

  /** Sends the request; returns the answer once verified; throws TollgateVerificationError or, for a verified error, TollgateError. */
  async send(req: Outgoing): Promise<Verified> {
    const { response, sent } = await this.fetch(req);
    const body = new Uint8Array(await response.arrayBuffer());
    // A 413 is answered before the server reads the body: it is signed over the empty body's hash (docs/signing.md).
    const signedOver = response.status === 413 ? { ...sent, body: new Uint8Array(0) } : sent;
    const answer = await this.verify(signedOver, response, await sha256Hex(body));
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
    // expired once we have seen the server's time past its end (or, on a fresh install, past the SDK's release
    // time). Tolerance: several nodes' clocks differ a little.
    if (check.notAfter! < this.maxServerTime(state) - SERVER_CLOCK_TOLERANCE_MS) throw new TollgateVerificationError('key_expired', response.status);
    // Amendment D: an older key than the newest one verified is refused 10 minutes after that one was first seen.
    const now = Math.max(this.maxServerTime(state), state.highest_trusted_time, this.o.clock.now() + state.clock_offset_ms);
    if (state.newest_not_before > 0 && check.notBefore! < state.newest_not_before && now >= state.newest_seen_at + OLDER_KEY_GRACE_MS) {
      throw new TollgateVerificationError('key_retired', response.status);
    }
    await this.learn(check.t!, check.notBefore!);
    return { t: check.t!, kid: check.kid! };
  }

  /** The highest server time verified, never below the floor (the SDK's release time or `notBefore`). */
  maxServerTime(state: { max_server_time: number }): number {
    return Math.max(state.max_server_time, this.o.serverTimeFloor);
  }

  private async learn(t: number, notBefore: number): Promise<void> {
    const now = this.o.clock.now();
    this.memory.lastTick = undefined; // time spent online is not offline runtime
    const { state } = await this.memory.read();
    const newer = notBefore > state.newest_not_before;
    await this.memory.update(
      (s) => {
        // The server's time, from an answer to our own fresh nonce: the best clock there is. Raised, never
        // lowered (amendment E): a node whose clock lags must not undo what a faster one taught us.
        s.highest_trusted_time = Math.max(s.highest_trusted_time, t);
        s.max_server_time = Math.max(s.max_server_time, t);
        s.clock_offset_ms = t - now;
        if (notBefore > s.newest_not_before) {
          s.newest_not_before = notBefore;
          s.newest_seen_at = t;
        }
      },
      { lazy: !newer, offset: true },
    );
    if (now - state.keys_fetched_at >= this.o.keyRefreshMs) await this.refreshKeys();
  }

  /** GET /signing_keys: learns the retired kids (the set only grows) and the current ones. Throws like any call. */
  async fetchKeyList(): Promise<KeyList> {
    const wasRefreshing = this.refreshing;
    this.refreshing = true; // the key list's own answer must not trigger another refresh
    try {
      const res = await this.send({ method: 'GET', path: '/signing_keys' });
      const list = JSON.parse(new TextDecoder().decode(res.body)) as KeyList;
      // Recorded only once it worked: a blocked or failed fetch must not postpone the next one by a day.
      const fetchedAt = this.o.clock.now();
      await this.memory.update((s) => {
        s.keys_fetched_at = Math.max(s.keys_fetched_at, fetchedAt);
        for (const kid of list.retired) if (!s.retired.includes(kid)) s.retired.push(kid);
        for (const k of list.keys) if (!s.known.includes(k.kid)) s.known.push(k.kid);
      });
      return list;
    } finally {
      this.refreshing = wasRefreshing;
    }
  }

  /**
   * The refresh done on the way: on an unknown kid or when the daily one is due. Bounded: one lookup per kid a
   * minute and a few a minute in all (an emulator inventing kids cannot make us fetch per answer); a failed
   * fetch is retried a minute later. A kid becomes known only from a verified key list, so an unknown kid
   * whose lookup failed or was skipped is looked up again later.
   */
  private async refreshKeys(unknownKid?: string): Promise<void> {
    if (this.refreshing) return;
    const mono = this.o.clock.monotonic();
    if (mono < this.retryAt) return;
    if (unknownKid !== undefined) {
      for (const [kid, at] of this.lookedUp) if (mono - at >= UNKNOWN_KID_REFRESH_GAP_MS || mono < at) this.lookedUp.delete(kid);
      if (this.lookedUp.has(unknownKid) || this.lookedUp.size >= UNKNOWN_KID_LOOKUPS_PER_MINUTE) return;
      this.lookedUp.set(unknownKid, mono);
    }
    try {
      await this.fetchKeyList();
    } catch {
      // Unreachable, blocked or unverifiable (an unsigned 503 from a proxy): the answer at hand is still verified
      // on its own, with what we know; amendment D covers an older key a blocked list would have named retired.
      this.retryAt = mono + UNKNOWN_KID_REFRESH_GAP_MS;
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
