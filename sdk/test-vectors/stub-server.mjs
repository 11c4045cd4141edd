#!/usr/bin/env node
/**
 * A small SIGNED stand-in for the Tollgate server, for the SDKs' unit tests of
 * the issue 24/25 client features (entitlements, trials, floating seats with
 * heartbeats, device self-reset) where a test must steer the server: make a
 * heartbeat answer 404 seat_not_found, stop answering, answer 429
 * reset_cooldown. It signs every client answer exactly as docs/signing.md says
 * (the layouts of lib.mjs, never the server's code), with its own root and key,
 * certified from now on, for the app id of fixtures.mjs. The answers' shapes
 * are those of /work/notes/contract.md (the issue 24/25 wire contract). The
 * real server is what the SDKs' live tests use; this one is for the cases a
 * live server cannot be made to produce on demand.
 *
 *   node sdk/test-vectors/stub-server.mjs    # prints one JSON line {url, app_id, root_public_key, app_key, app_secret}
 *                                           # and serves until its stdin closes (so a test's child never outlives it)
 *   node sdk/test-vectors/stub-server.mjs --run <program> [args]   # runs the program with TOLLGATE_STUB_URL,
 *                                           # TOLLGATE_STUB_APP_ID and TOLLGATE_STUB_ROOT_KEY set; exits with its status
 *
 * Control (unsigned, for tests): POST /_stub/config merges a JSON object into the behaviour (see DEFAULTS),
 * GET /_stub/log lists the client requests received ({method, path, hardware_id, authorization, at}),
 * POST /_stub/seat/expire kills the device's seat at once (as the server's sweeper would).
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { pathToFileURL } from 'node:url';
import { APP_ID } from './fixtures.mjs';
import { b64url, certify, credentialsSha256, ed25519, encodeJson, hwidHash, keyPair, leaseFile, leaseInput, responseInput, sha256Hex, signatureHeader, utf8 } from './lib.mjs';

const DAY = 86_400_000;
export const STUB_APP_KEY = 'stub-app-key';
export const STUB_APP_SECRET = 'stub-app-secret';

export const DEFAULTS = {
  /** The user's entitlement codes in answers (membership.entitlements). */
  entitlements: ['pro'],
  /** The lease payload's entitlements ({code, until}); null: derived from `entitlements` with until null. */
  lease_entitlements: null,
  /** A trial user (membership.is_trial, the lease's is_trial). */
  is_trial: false,
  /** Omit both new lease fields (a lease of a server before issue 24). */
  old_lease: false,
  /** Seats: interval and the pool. */
  heartbeat_seconds: 300,
  max_seats: 5,
  /** POST /seats: 'ok', 'exhausted' (409 seats_exhausted), 'not_enabled' (409 seats_not_enabled). */
  checkout: 'ok',
  /** POST /seats/heartbeat: 'ok', 'seat_not_found' (404), 'conflict' (409), 'unavailable' (unsigned 503), 'forged' (a bad signature). */
  heartbeat: 'ok',
  /** DELETE /seats: 'ok', or 'held' (an offline lease holds the seat: released false, held_until a day on, the seat kept). */
  release: 'ok',
  /** POST /devices/reset: 'ok', 'cooldown' (429 reset_cooldown), 'disabled' (403 reset_disabled). */
  reset: 'ok',
  /** POST /trial: 'ok', 'trial_used', 'trials_disabled'. */
  trial: 'ok',
};

export async function startStub({ port = 0 } = {}) {
  const root = keyPair('stub/root');
  const key = { ...keyPair('stub/signing'), kid: 'stub_k1' };
  const started = Date.now();
  const certificate = encodeJson(certify(root, { app_id: APP_ID, kid: key.kid, public_key: key.publicKey, not_before: started - DAY, not_after: started + 30 * DAY }));
  let config = { ...DEFAULTS };
  const log = [];
  /** Live seats by hardware id. */
  const seats = new Map();
  let seq = 0;
  let lastReset = null;

  const iso = (ms) => new Date(ms).toISOString();
  const user = (trial = config.is_trial) => ({
    id: 'stub-user-1',
    username: 'alice',
    membership: { is_active: true, is_lifetime: true, active_until: null, entitlements: [...config.entitlements].sort(), ...(trial && { is_trial: true }) },
  });

  function signed(req, reqBody, status, body, contentType = 'application/json', { forge = false } = {}) {
    const bytes = typeof body === 'string' ? utf8(body) : utf8(JSON.stringify(body));
    const t = Date.now();
    const input = responseInput({
      kid: key.kid, t, nonce: String(req.headers['tollgate-nonce'] ?? ''), appId: APP_ID, status, method: req.method, target: req.url,
      requestBodySha256: sha256Hex(reqBody), credentialsSha256: credentialsSha256(req.headers, 'latin1'), responseLine: sha256Hex(bytes),
    });
    const sig = ed25519(key, input);
    if (forge) sig[5] ^= 1;
    return { status, headers: { 'content-type': contentType, 'tollgate-signature': signatureHeader(key.kid, t, sig), 'tollgate-key-cert': certificate }, body: bytes };
  }
  const refuse = (req, reqBody, status, code, extra = {}) => signed(req, reqBody, status, { detail: code.replace(/_/g, ' '), code, ...extra });
  const hasUser = (h) => h.authorization !== undefined || h['x-api-license-code'] !== undefined || h['x-api-username'] !== undefined;

  function seatAnswer(req, reqBody, seat, options = {}) {
    return signed(req, reqBody, 200, {
      seat: { id: seat.id, checked_out_at: iso(seat.checked_out_at), expires_at: iso(seat.expires_at), heartbeat_seconds: config.heartbeat_seconds },
      seats: { max: config.max_seats, in_use: seats.size },
      server_time: iso(Date.now()),
    }, 'application/json', options);
  }

  function lease(hardwareId) {
    const iat = Date.now();
    const grace = 7 * 24 * 3600;
    const payload = {
      lease_id: randomUUID(), seq: ++seq, app_id: APP_ID, user_id: user().id, hwid_hash: hwidHash(APP_ID, hardwareId), is_lifetime: true, active_until: null,
      iat, renew_after: iat + DAY, exp: iat + grace * 1000, max_offline_runtime_s: grace,
      ...(!config.old_lease && {
        entitlements: config.lease_entitlements ?? [...config.entitlements].sort().map((code) => ({ code, until: null })),
        is_trial: config.is_trial,
      }),
    };
    const bytes = utf8(JSON.stringify(payload));
    return leaseFile({ v: 1, kid: key.kid, cert: certificate, payload: b64url(bytes), sig: b64url(ed25519(key, leaseInput(bytes))) });
  }

  function route(req, body) {
    const h = req.headers;
    const hwid = h['x-hardware-id'];
    const path = req.url.split('?')[0];
    const at = `${req.method} ${path}`;
    if (at === 'GET /signing_keys') return signed(req, body, 200, { keys: [{ kid: key.kid, certificate, status: 'active' }], retired: [] });
    if (at === 'GET /app_context') return signed(req, body, 200, { application: { id: APP_ID, name: 'Stub', variables: [], files: [] }, user: hasUser(h) ? user() : null, server_time: iso(Date.now()) });
    if (at === 'POST /auth/login') return signed(req, body, 200, { session_token: 'stub-session' });
    if (at === 'POST /trial') {
      let parsed = {};
      try {
        parsed = JSON.parse(body.toString('utf8'));
      } catch {}
      if (typeof parsed.hardware_id !== 'string' || parsed.hardware_id === '') return refuse(req, body, 422, 'validation_error');
      if (config.trial !== 'ok') return refuse(req, body, 403, config.trial);
      return signed(req, body, 200, { session_token: 'stub-trial-session', user: user(true) });
    }
    if (at === 'POST /lease') {
      if (!hwid) return refuse(req, body, 422, 'validation_error');
      return signed(req, body, 200, lease(hwid), 'application/x-tollgate-lease');
    }
    if (path === '/seats' || path === '/seats/heartbeat') {
      if (!hwid) return refuse(req, body, 422, 'hardware_id_required');
      if (!hasUser(h)) return refuse(req, body, 401, 'invalid_credentials');
      const now = Date.now();
      const live = seats.get(hwid);
      if (live && live.expires_at <= now) seats.delete(hwid);
      if (at === 'POST /seats') {
        if (config.checkout === 'not_enabled') return refuse(req, body, 409, 'seats_not_enabled');
        if (config.checkout === 'exhausted') return refuse(req, body, 409, 'seats_exhausted', { in_use: config.max_seats, max: config.max_seats, next_free_at: iso(now + config.heartbeat_seconds * 1000) });
        const seat = seats.get(hwid) ?? { id: randomUUID(), checked_out_at: now };
        seat.expires_at = now + config.heartbeat_seconds * 1000;
        seats.set(hwid, seat);
        return seatAnswer(req, body, seat);
      }
      if (at === 'POST /seats/heartbeat') {
        if (config.heartbeat === 'unavailable') return { status: 503, headers: { 'content-type': 'application/json', 'retry-after': '1' }, body: utf8('{"detail":"down","code":"service_unavailable"}') };
        if (config.heartbeat === 'conflict') return refuse(req, body, 409, 'seats_exhausted', { in_use: config.max_seats, max: config.max_seats, next_free_at: iso(now) });
        const seat = seats.get(hwid);
        if (config.heartbeat === 'seat_not_found' || !seat) return refuse(req, body, 404, 'seat_not_found');
        seat.expires_at = now + config.heartbeat_seconds * 1000;
        return seatAnswer(req, body, seat, { forge: config.heartbeat === 'forged' });
      }
      if (at === 'DELETE /seats') {
        if (config.release === 'held') return signed(req, body, 200, { released: false, server_time: iso(now), held_until: iso(now + DAY) });
        const released = seats.delete(hwid);
        return signed(req, body, 200, { released, server_time: iso(now) });
      }
    }
    if (at === 'POST /devices/reset') {
      if (!hasUser(h)) return refuse(req, body, 401, 'invalid_credentials');
      const now = Date.now();
      if (config.reset === 'disabled') return refuse(req, body, 403, 'reset_disabled');
      if (config.reset === 'cooldown') {
        const last = lastReset ?? now - 3600_000;
        const answer = refuse(req, body, 429, 'reset_cooldown', { retry_after: 7 * 24 * 3600 - 3600, last_reset_at: iso(last) });
        return { ...answer, headers: { ...answer.headers, 'retry-after': String(7 * 24 * 3600 - 3600) } };
      }
      lastReset = now;
      return signed(req, body, 200, { reset_at: iso(now), next_reset_at: iso(now + 7 * DAY), devices_removed: 1, server_time: iso(now) });
    }
    return refuse(req, body, 404, 'not_found');
  }

  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const send = (a) => {
        res.writeHead(a.status, { ...a.headers, 'content-length': String(a.body.length) });
        res.end(a.body);
      };
      if (req.url.startsWith('/_stub/')) {
        if (req.url === '/_stub/config' && req.method === 'POST') config = { ...config, ...JSON.parse(body.toString('utf8') || '{}') };
        if (req.url === '/_stub/seat/expire') seats.clear();
        const out = req.url === '/_stub/log' ? log : { config, seats: [...seats.values()] };
        return send({ status: 200, headers: { 'content-type': 'application/json' }, body: utf8(JSON.stringify(out)) });
      }
      log.push({ method: req.method, path: req.url, hardware_id: req.headers['x-hardware-id'] ?? null, authorization: req.headers.authorization ?? null, at: Date.now() });
      try {
        send(route(req, body));
      } catch (err) {
        send({ status: 500, headers: {}, body: utf8(String(err)) });
      }
    });
  });
  await new Promise((done) => server.listen(port, '127.0.0.1', done));
  const url = `http://127.0.0.1:${server.address().port}`;
  return {
    url,
    appId: APP_ID,
    rootPublicKey: root.publicKey,
    appKey: STUB_APP_KEY,
    appSecret: STUB_APP_SECRET,
    log,
    configure: (over) => void (config = { ...config, ...over }),
    expireSeats: () => seats.clear(),
    close: () => new Promise((done) => { server.closeAllConnections?.(); server.close(() => done()); }),
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href && process.argv[2] === '--run') {
  const stub = await startStub();
  const env = { ...process.env, TOLLGATE_STUB_URL: stub.url, TOLLGATE_STUB_APP_ID: stub.appId, TOLLGATE_STUB_ROOT_KEY: stub.rootPublicKey };
  const child = spawn(process.argv[3], process.argv.slice(4), { env, stdio: 'inherit' });
  child.on('exit', (code, signal) => stub.close().then(() => process.exit(code ?? (signal ? 1 : 0))));
} else if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const stub = await startStub();
  process.stdout.write(`${JSON.stringify({ url: stub.url, app_id: stub.appId, root_public_key: stub.rootPublicKey, app_key: stub.appKey, app_secret: stub.appSecret })}\n`);
  process.stdin.resume();
  process.stdin.on('end', () => stub.close().then(() => process.exit(0)));
  process.stdin.on('error', () => process.exit(0));
}
