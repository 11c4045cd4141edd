/**
 * One signed exchange with the server: a fresh nonce, the exact bytes sent,
 * and the answer verified (docs/signing.md) before anything reads its body.
 * Also what the client learns from verified answers: the server's time, new
 * and retired kids, and the codes that drop an offline lease.
 */
import { newNonce, sha256Hex } from './crypto.js';
import { utf8 } from './encoding.js';
import { TollgateError, TollgateException, TollgateNetworkError, TollgateUnavailableError, TollgateVerificationError } from './errors.js';
import { credentialHeadersSha256, parseSignatureHeader, verifyAnswer } from './verify.js';
/** The verified refusals that tell the SDK to drop its lease: a ban, a revoked license, a deleted user, a device reset. */
export const DROP_CODES = new Set(['banned', 'membership_inactive', 'invalid_credentials', 'invalid_license', 'device_mismatch', 'device_limit']);
/** How far apart the server's nodes' clocks may be. */
const SERVER_CLOCK_TOLERANCE_MS = 5 * 60_000;
/** An unknown kid is looked up at most this often, and a failed key-list fetch retried after this long. */
const UNKNOWN_KID_REFRESH_GAP_MS = 60_000;
/** At most this many key-list fetches a minute for unknown kids, however many an emulator invents. */
const UNKNOWN_KID_LOOKUPS_PER_MINUTE = 4;
/** Credential digests remembered with their user (issue 21.2); more are rare (one app, a few users): the map starts again. */
const USERS_KEPT = 1000;
/**
 * Amendment D: once an answer signed by a newer key (later not_before) has verified, answers signed by older
 * keys are refused this long after it: every node signs with the new key within the cache TTL (1 s), so an
 * older key after that is a leaked one, even when a proxy blocks GET /signing_keys so its retirement is unseen.
 */
export const OLDER_KEY_GRACE_MS = 10 * 60_000;
export class Transport {
    o;
    memory;
    /** Unknown kids looked up in the last minute, and when (monotonic): one lookup per kid a minute. */
    lookedUp = new Map();
    /** No key-list fetch on the way before this (monotonic): set a minute ahead by a failed one. */
    retryAt = -Infinity;
    refreshing = false;
    /**
     * Issue 21.2: the credential digest of each request whose verified 2xx named its user → that user's id. Only for
     * a refusal that names nobody and is not a ban (invalid_credentials, invalid_license): the server cannot say whose
     * credentials they were, so the lease drops only when this process saw them accepted for the lease's user.
     */
    users = new Map();
    constructor(o, memory) {
        this.o = o;
        this.memory = memory;
    }
    /**
     * Sends the request; returns the answer once verified. Throws TollgateNetworkError (no answer),
     * TollgateUnavailableError (a 5xx), TollgateVerificationError, or, for a verified 4xx, TollgateError.
     */
    async send(req) {
        const { response, sent, body } = await this.fetch(req, true);
        return this.answer(req, sent, response, body);
    }
    /** The checks of a whole answer: an unsigned 5xx is unavailable, anything else is verified, then a 4xx refused and a 5xx unavailable. */
    async answer(req, sent, response, body) {
        // No signature on a 5xx: the server's own 503 while its database is down, or a proxy's 502. Nothing of it is
        // trusted, but it is not a forgery either: the service is unavailable (a signed 5xx that fails is a forgery).
        if (response.status >= 500 && response.headers.get('tollgate-signature') === null)
            throw unavailable(response, false, null);
        // A 413 is answered before the server reads the body: it is signed over the empty body's hash (docs/signing.md).
        const signedOver = response.status === 413 ? { ...sent, body: new Uint8Array(0) } : sent;
        const answer = await this.verify(signedOver, response, await sha256Hex(body));
        const verified = { status: response.status, headers: response.headers, body, t: answer.t, credentialsSha256: sent.credentialsSha256 };
        if (response.status >= 500)
            throw unavailable(response, true, parseError(body).code ?? null);
        if (response.status >= 400)
            await this.refuse(req, verified);
        return verified;
    }
    /**
     * Sends the request with what was sent for a later verify(); with `read`, also the whole body, under the total
     * timeout; without (downloads), the response unread once its headers came. Network failures and timeouts are
     * thrown as TollgateNetworkError.
     */
    async fetch(req, read = false) {
        const url = new URL(this.o.baseUrl.replace(/\/+$/, '') + req.path);
        const body = req.json === undefined ? new Uint8Array(0) : utf8(JSON.stringify(req.json));
        const nonce = newNonce();
        const headers = {
            'x-api-key': this.o.appKey,
            'x-api-secret': this.o.appSecret,
            'tollgate-nonce': nonce,
            ...(req.json !== undefined && { 'content-type': 'application/json' }),
            ...req.headers,
        };
        // Exactly the credential headers this request carries: the answer must be for them, not for a user a proxy swapped in.
        const sent = { method: req.method, target: url.pathname + url.search, body, nonce, credentialsSha256: await credentialHeadersSha256(headers) };
        const timer = new AbortController();
        const timeout = setTimeout(() => timer.abort(), this.o.timeoutMs);
        try {
            const dispatcher = this.o.builtinFetch ? await connectAgent(this.o.connectTimeoutMs) : undefined;
            // No redirects followed: another target would not be what we sign over, and a 3xx from a proxy is unsigned anyway.
            const init = { method: req.method, headers, body: req.json === undefined ? undefined : body, redirect: 'manual', signal: timer.signal, ...(dispatcher ? { dispatcher } : {}) };
            const response = await this.o.fetch(url, init);
            if (!read)
                return { response, sent };
            return { response, sent, body: new Uint8Array(await response.arrayBuffer()) };
        }
        catch (err) {
            throw networkError(err, timer.signal.aborted);
        }
        finally {
            clearTimeout(timeout);
        }
    }
    /** Verifies an answer (steps 1–8) and records what a verified answer teaches; throws on any failure. */
    async verify(sent, response, responseLine) {
        const signature = response.headers.get('tollgate-signature');
        const certificate = response.headers.get('tollgate-key-cert');
        const kid = signature === null ? undefined : parseSignatureHeader(signature)?.kid;
        if (kid !== undefined && !(await this.memory.read()).state.known.includes(kid))
            await this.refreshKeys(kid);
        const { state } = await this.memory.read();
        const check = await verifyAnswer(this.o.pinned, new Set(state.retired), sent, { status: response.status, signature, certificate, responseLine });
        if (check.verdict !== 'ok')
            throw new TollgateVerificationError(check.verdict, response.status);
        // Beyond the contract's steps: an ended key that signs a back-dated `t` (a leaked old private key) is still
        // expired once we have seen the server's time past its end (or, on a fresh install, past the SDK's release
        // time). Tolerance: several nodes' clocks differ a little.
        if (check.notAfter < this.maxServerTime(state) - SERVER_CLOCK_TOLERANCE_MS)
            throw new TollgateVerificationError('key_expired', response.status);
        // Amendment D: an older key than the newest one verified is refused 10 minutes after that one was first seen.
        const now = Math.max(this.maxServerTime(state), state.highest_trusted_time, this.o.clock.now() + state.clock_offset_ms);
        if (state.newest_not_before > 0 && check.notBefore < state.newest_not_before && now >= state.newest_seen_at + OLDER_KEY_GRACE_MS) {
            throw new TollgateVerificationError('key_retired', response.status);
        }
        await this.learn(check.t, check.notBefore);
        return { t: check.t, kid: check.kid };
    }
    /** Server time now, as far as the client knows: the local clock plus the offset of the last verified answer. */
    serverNow() {
        return this.o.clock.now() + this.memory.offset();
    }
    /** The highest server time verified, never below the floor (the SDK's release time or `notBefore`). */
    maxServerTime(state) {
        return Math.max(state.max_server_time, this.o.serverTimeFloor);
    }
    async learn(t, notBefore) {
        const now = this.o.clock.now();
        this.memory.lastTick = undefined; // time spent online is not offline runtime
        const { state } = await this.memory.read();
        const newer = notBefore > state.newest_not_before;
        await this.memory.update((s) => {
            // The server's time, from an answer to our own fresh nonce: the best clock there is. Raised, never
            // lowered (amendment E): a node whose clock lags must not undo what a faster one taught us.
            s.highest_trusted_time = Math.max(s.highest_trusted_time, t);
            s.max_server_time = Math.max(s.max_server_time, t);
            s.clock_offset_ms = t - now;
            if (notBefore > s.newest_not_before) {
                s.newest_not_before = notBefore;
                s.newest_seen_at = t;
            }
        }, { lazy: !newer, offset: true });
        if (now - state.keys_fetched_at >= this.o.keyRefreshMs)
            await this.refreshKeys();
    }
    /** GET /signing_keys: learns the retired kids (the set only grows) and the current ones. Throws like any call. */
    async fetchKeyList() {
        const wasRefreshing = this.refreshing;
        this.refreshing = true; // the key list's own answer must not trigger another refresh
        try {
            const res = await this.send({ method: 'GET', path: '/signing_keys' });
            const list = JSON.parse(new TextDecoder().decode(res.body));
            // Recorded only once it worked: a blocked or failed fetch must not postpone the next one by a day.
            const fetchedAt = this.o.clock.now();
            await this.memory.update((s) => {
                s.keys_fetched_at = Math.max(s.keys_fetched_at, fetchedAt);
                for (const kid of list.retired)
                    if (!s.retired.includes(kid))
                        s.retired.push(kid);
                for (const k of list.keys)
                    if (!s.known.includes(k.kid))
                        s.known.push(k.kid);
            });
            return list;
        }
        finally {
            this.refreshing = wasRefreshing;
        }
    }
    /**
     * The refresh done on the way: on an unknown kid or when the daily one is due. Bounded: one lookup per kid a
     * minute and a few a minute in all (an emulator inventing kids cannot make us fetch per answer); a failed
     * fetch is retried a minute later. A kid becomes known only from a verified key list, so an unknown kid
     * whose lookup failed or was skipped is looked up again later.
     */
    async refreshKeys(unknownKid) {
        if (this.refreshing)
            return;
        const mono = this.o.clock.monotonic();
        if (mono < this.retryAt)
            return;
        if (unknownKid !== undefined) {
            for (const [kid, at] of this.lookedUp)
                if (mono - at >= UNKNOWN_KID_REFRESH_GAP_MS || mono < at)
                    this.lookedUp.delete(kid);
            if (this.lookedUp.has(unknownKid) || this.lookedUp.size >= UNKNOWN_KID_LOOKUPS_PER_MINUTE)
                return;
            this.lookedUp.set(unknownKid, mono);
        }
        try {
            await this.fetchKeyList();
        }
        catch {
            // Unreachable, blocked or unverifiable (an unsigned 503 from a proxy): the answer at hand is still verified
            // on its own, with what we know; amendment D covers an older key a blocked list would have named retired.
            this.retryAt = mono + UNKNOWN_KID_REFRESH_GAP_MS;
        }
    }
    /** A verified 2xx named the user of these credentials (app_context, a lease): refusals for them may drop that user's lease. */
    noteUser(credentialsSha256, userId) {
        if (this.users.size >= USERS_KEPT && !this.users.has(credentialsSha256))
            this.users.clear();
        this.users.set(credentialsSha256, userId);
    }
    /** A verified error answer: maybe drop the lease (only for a refusal about its user or this machine), then throw it as a TollgateError. */
    async refuse(req, answer) {
        const parsed = parseError(answer.body);
        const code = parsed.code ?? 'unknown_error';
        if (req.dropsLease && DROP_CODES.has(code)) {
            const leaseUser = await this.o.leaseUserId();
            if (leaseUser !== null && this.refusalDrops(code, parsed.userId, answer.credentialsSha256, leaseUser)) {
                await this.memory.update((s) => void (s.dropped = true));
            }
        }
        throw new TollgateError(answer.status, code, parsed.detail, parsed.errors, parsed.banReason, parsed.userId, parsed.extra);
    }
    /** Issue 21.2 (docs/signing.md): whether a verified refusal with a drop code is about the stored lease's user. */
    refusalDrops(code, userId, credentialsSha256, leaseUser) {
        // The server named whom it refused (signed, so not a proxy's choice): that user's lease only.
        if (userId !== null)
            return userId === leaseUser;
        // A ban that names nobody was met before any user: an IP or hardware-id ban, i.e. this machine.
        if (code === 'banned')
            return true;
        // invalid_credentials / invalid_license identify nobody: only credentials this process saw accepted for the lease's user.
        return this.users.get(credentialsSha256) === leaseUser;
    }
}
/** The error body's fields, each only when of the right type. */
function parseError(body) {
    let parsed = {};
    try {
        parsed = JSON.parse(new TextDecoder().decode(body));
    }
    catch { }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
        parsed = {};
    const { code: _c, detail: _d, errors: _e, ban_reason: _b, user_id: _u, ...extra } = parsed;
    return {
        extra,
        ...(typeof parsed.code === 'string' && { code: parsed.code }),
        detail: typeof parsed.detail === 'string' ? parsed.detail : '',
        ...(Array.isArray(parsed.errors) && { errors: parsed.errors }),
        banReason: typeof parsed.ban_reason === 'string' ? parsed.ban_reason : null,
        userId: typeof parsed.user_id === 'string' ? parsed.user_id : null,
    };
}
function unavailable(response, verified, code) {
    const retry = /^\s*(\d+)\s*$/.exec(response.headers.get('retry-after') ?? '');
    return new TollgateUnavailableError(response.status, verified, code, retry ? Number(retry[1]) : null);
}
/** Undici's codes for a connect or read that took too long (its own timeouts, below ours). */
const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT']);
/** Any failure of the exchange itself (never of the app's code) as a TollgateNetworkError; the SDK's own errors pass. */
export function networkError(err, timedOut) {
    if (err instanceof TollgateException)
        return err;
    const cause = err?.cause;
    const code = typeof cause?.code === 'string' ? cause.code : undefined;
    const timeout = timedOut || (code !== undefined && TIMEOUT_CODES.has(code));
    const what = typeof cause?.message === 'string' ? cause.message : err instanceof Error ? err.message : String(err);
    return new TollgateNetworkError(timeout ? 'timeout' : 'connection', timedOut ? 'no answer within the total timeout' : what, { cause: err });
}
/**
 * An agent of Node's built-in fetch (undici) with our connect timeout. Node does not export undici's Agent, but
 * its global dispatcher is one (under a registered symbol, created by the first fetch): a new one of its class
 * takes the connect timeout. Where that is not so, fetch keeps undici's own connect timeout (10 s).
 */
const agents = new Map();
const GLOBAL_DISPATCHER = Symbol.for('undici.globalDispatcher.1');
async function connectAgent(connectTimeoutMs) {
    let agent = agents.get(connectTimeoutMs);
    if (agent !== undefined)
        return agent;
    const g = globalThis;
    if (g[GLOBAL_DISPATCHER] === undefined)
        await fetch('data:,').catch(() => undefined);
    const Agent = g[GLOBAL_DISPATCHER]?.constructor;
    agent = Agent && Agent !== Object ? new Agent({ connect: { timeout: connectTimeoutMs } }) : null;
    agents.set(connectTimeoutMs, agent);
    return agent ?? undefined;
}
//# sourceMappingURL=transport.js.map