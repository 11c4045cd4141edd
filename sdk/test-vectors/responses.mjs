/** responses.json: requests, the answers the client received, and the verdict of docs/signing.md. */
import { DAY, b64url, credentialsSha256, downloadLine, ed25519, responseInput, sha256Hex, signatureHeader, utf8 } from './lib.mjs';
import {
  APP_ID, OTHER_APP_ID, T0, evil, evilCertOtherRoot, k1, k1CertEncoded, k1CertOtherApp, k1Fields, k2, k2CertEncoded, rawCert, k1Cert, root,
} from './fixtures.mjs';

const FILE_ID = '3c1d9e7a-5b2f-4e8c-a1d6-7f0b2c9e4a53';
const FILE = utf8('hello from tollgate\n'.repeat(3));
const NONCE = 'n0nce-AAAAAAAAAAAAAAAAAAAA';
const OLD_NONCE = 'n0nce-BBBBBBBBBBBBBBBBBBBB';
const SESSION = 'Bearer tg_sess_0123456789abcdef';
const PAYING_SESSION = 'Bearer tg_sess_fedcba9876543210';
/** Credentials as a client sends them (text; on the wire UTF-8). */
const FREE_USER = { 'x-api-username': 'zoë', 'x-api-password': 'pässwörd 🔑' };
const PAYING_USER = { 'x-api-username': 'paying', 'x-api-password': 'correct horse battery' };
const HWID = { 'x-hardware-id': 'hw-1f2e3d' };

const appContextBody = utf8(JSON.stringify({ application: { variables: { latest_version: '2.4.1' }, files: [] }, user: null, server_time: '2026-01-01T01:00:00.000Z' }));
const loginRequest = utf8(JSON.stringify({ credentials: { username: 'alice', password: 'correct horse battery' } }));
const loginAnswer = utf8(JSON.stringify({ session_token: 'tg_sess_0123456789abcdef' }));
const errorAnswer = utf8(JSON.stringify({ detail: 'Invalid credentials', code: 'invalid_credentials' }));

/**
 * Signs an answer. `signed` holds what the signer put in the 10 lines; `sent` what the client
 * then receives and `request` what it sent (by default the same): a tampered case changes one.
 */
function answer({ key = k1, cert = k1CertEncoded, t = T0 + 3600_000, request, status = 200, body = utf8(''), headers = {}, signed = {} }) {
  const s = {
    kid: key.kid, t, nonce: request.nonce, appId: APP_ID, status, method: request.method, target: request.target, requestBody: request.body,
    requestHeaders: request.headers, responseLine: sha256Hex(body), ...signed,
  };
  const sig = ed25519(key, responseInput({ ...s, requestBodySha256: sha256Hex(s.requestBody), credentialsSha256: credentialsSha256(s.requestHeaders) }));
  return { status, headers: { 'tollgate-signature': signatureHeader(s.kid, s.t, sig), 'tollgate-key-cert': cert, ...headers }, body };
}

const req = (method, target, body = utf8(''), headers = {}, nonce = NONCE) => ({ method, target, body, headers, nonce });
const getContext = req('GET', '/app_context', utf8(''), { authorization: SESSION });
const postLogin = req('POST', '/auth/login', loginRequest);
const download = req('GET', `/files/${FILE_ID}/download`, utf8(''), { authorization: SESSION });
const legacyContext = req('GET', '/app_context', utf8(''), FREE_USER);
const licenseContext = req('GET', '/app_context', utf8(''), { 'x-api-license-code': 'FREE-0000-1111' });
const postLease = req('POST', '/lease', utf8(''), { ...FREE_USER, ...HWID });

function downloadAnswer(status, range, signedFile = FILE, signedRange = range) {
  const [from, to] = range ? /bytes (\d+)-(\d+)/.exec(range).slice(1).map(Number) : [0, FILE.length - 1];
  const headers = { etag: `"${sha256Hex(signedFile)}"`, ...(range && { 'content-range': range }) };
  return answer({ request: download, status, body: FILE.subarray(from, to + 1), headers, signed: { responseLine: downloadLine(sha256Hex(signedFile), signedRange) } });
}

export function responseCases() {
  const cases = [];
  const add = (name, why, request, ans, expect, extra = {}) => cases.push({ name, why, request, answer: ans, expect, ...extra });
  const ok = answer({ request: getContext, body: appContextBody });
  const withHeader = (a, name, value) => ({ ...a, headers: { ...a.headers, [name]: value } });
  const without = (a, name) => ({ ...a, headers: Object.fromEntries(Object.entries(a.headers).filter(([k]) => k !== name)) });
  const sigOf = (a) => a.headers['tollgate-signature'];

  add('ok', 'GET /app_context answered 200, signed by the current key', getContext, ok, 'ok');
  add('ok_post_body', 'POST /auth/login: the request body hash is in the signed bytes', postLogin, answer({ request: postLogin, body: loginAnswer }), 'ok');
  add('ok_error', 'error answers are signed too (the verdict is ok; the app then sees the error)', postLogin, answer({ request: postLogin, status: 401, body: errorAnswer }), 'ok');
  const logout = req('POST', '/auth/logout', utf8(''), { authorization: SESSION });
  add('ok_no_content', 'POST /auth/logout answered 204 with no body', logout, answer({ request: logout, status: 204 }), 'ok');
  const withQuery = req('GET', '/app_context?lang=en&x=%2F');
  add('ok_query', 'the target is the path and query exactly as sent', withQuery, answer({ request: withQuery, body: appContextBody }), 'ok');
  add('ok_rotated', 'the next key, certified by the same root: no client update', getContext, answer({ key: k2, cert: k2CertEncoded, t: T0 + 100 * DAY, request: getContext, body: appContextBody }), 'ok');
  add('ok_download_200', 'a whole download: the last line is file-sha256=…; content-range= (empty)', download, downloadAnswer(200), 'ok', { download: { file: FILE } });
  add('ok_download_206', 'a resumed download: the part received, the signature over the whole file and the Content-Range', download, downloadAnswer(206, `bytes 10-${FILE.length - 1}/${FILE.length}`), 'ok', { download: { file: FILE } });

  add('ok_credentials_legacy', 'x-api-username and x-api-password (UTF-8, non-ASCII) are hashed into the signed bytes', legacyContext, answer({ request: legacyContext, body: appContextBody }), 'ok');
  add('ok_credentials_license', 'x-api-license-code is hashed into the signed bytes', licenseContext, answer({ request: licenseContext, body: appContextBody }), 'ok');
  add('ok_credentials_lease', 'POST /lease: username, password and x-hardware-id hashed in that order', postLease, answer({ request: postLease, body: utf8('lease') }), 'ok');
  const spaced = req('GET', '/app_context', utf8(''), { authorization: ` \t${SESSION}\t `, 'x-hardware-id': ' hw-1f2e3d ' });
  add('ok_credentials_trimmed', 'leading and trailing spaces and tabs of a credential header are not hashed (HTTP parsers drop them)', spaced, answer({ request: spaced, body: appContextBody, signed: { requestHeaders: { authorization: SESSION, ...HWID } } }), 'ok');
  add('ok_credentials_none', 'no credential header: the line is the empty hash (POST /auth/login carries its credentials in the body)', postLogin, answer({ request: postLogin, status: 401, body: errorAnswer }), 'ok');

  add('missing_signature', 'no Tollgate-Signature (an unsigned answer)', getContext, without(ok, 'tollgate-signature'), 'missing_signature');
  add('missing_certificate', 'no Tollgate-Key-Cert', getContext, without(ok, 'tollgate-key-cert'), 'missing_signature');
  add('missing_both', 'neither header (an answer given before the app was known)', getContext, without(without(ok, 'tollgate-key-cert'), 'tollgate-signature'), 'missing_signature');

  const [, kid, t, sig] = /^v1; kid=(.*); t=(.*); sig=(.*)$/.exec(sigOf(ok));
  const malformed = {
    malformed_version: `v2; kid=${kid}; t=${t}; sig=${sig}`,
    malformed_order: `v1; t=${t}; kid=${kid}; sig=${sig}`,
    malformed_extra_field: `v1; kid=${kid}; t=${t}; sig=${sig}; x=1`,
    malformed_t_not_decimal: `v1; kid=${kid}; t=0x${Number(t).toString(16)}; sig=${sig}`,
    malformed_t_signed: `v1; kid=${kid}; t=+${t}; sig=${sig}`,
    malformed_sig_short: `v1; kid=${kid}; t=${t}; sig=${b64url(Buffer.from(sig, 'base64url').subarray(0, 63))}`,
    malformed_sig_padded: `v1; kid=${kid}; t=${t}; sig=${sig}==`,
    malformed_no_spaces: `v1;kid=${kid};t=${t};sig=${sig}`,
    malformed_kid_bad_chars: `v1; kid=k1 2026; t=${t}; sig=${sig}`,
    malformed_empty: '',
  };
  for (const [name, value] of Object.entries(malformed)) add(name, `header: ${JSON.stringify(value.slice(0, 60))}`, getContext, withHeader(ok, 'tollgate-signature', value), 'malformed_signature');

  const emulatorOwnRoot = answer({ key: evil, cert: evilCertOtherRoot, request: getContext, body: appContextBody });
  add('bad_certificate_emulator_root', 'an emulator with its own root and key: the pinned root does not verify its certificate', getContext, emulatorOwnRoot, 'bad_certificate');
  add('bad_certificate_garbled', 'a certificate that does not decode', getContext, withHeader(ok, 'tollgate-key-cert', 'AAAA'), 'bad_certificate');
  add('bad_certificate_field_changed', 'the certificate with not_after extended after signing', getContext, withHeader(ok, 'tollgate-key-cert', rawCert({ ...k1Cert, not_after: k1Cert.not_after + DAY })), 'bad_certificate');
  add('wrong_app', "another app's certificate (same root): the answer is for another app", getContext, answer({ cert: k1CertOtherApp, request: getContext, body: appContextBody }), 'wrong_app');
  add('kid_mismatch', "the signature names k2 but carries k1's certificate", getContext, answer({ cert: k1CertEncoded, key: k2, t: T0 + 70 * DAY, request: getContext, body: appContextBody }), 'kid_mismatch');
  add('key_retired', 'a retired kid (learned from GET /signing_keys) is refused even though it verifies', getContext, ok, 'key_retired', { retired: [k1.kid] });
  add('key_expired_after', 't one millisecond after not_after', getContext, answer({ t: k1Fields.not_after + 1, request: getContext, body: appContextBody }), 'key_expired');
  add('key_expired_before', 't one millisecond before not_before', getContext, answer({ t: k1Fields.not_before - 1, request: getContext, body: appContextBody }), 'key_expired');

  const tampered = (name, why, request, signed, body = appContextBody, status = 200) => add(name, why, request, answer({ request, body, status, signed }), 'bad_signature');
  tampered('bad_signature_status', 'signed as a 403, received as a 200', getContext, { status: 403 });
  tampered('bad_signature_body', 'the body changed after signing', getContext, { responseLine: sha256Hex(utf8('{"user":null}')) });
  tampered('bad_signature_target', 'an answer to another request target', getContext, { target: '/app_context?x=1' });
  tampered('bad_signature_method', 'an answer to another method', getContext, { method: 'POST' });
  tampered('bad_signature_replay', 'a replay: the right key, an old nonce', getContext, { nonce: OLD_NONCE });
  tampered('bad_signature_other_app', 'signed with this app\'s key but for another app id', getContext, { appId: OTHER_APP_ID });
  tampered('bad_signature_request_body', 'an answer to another request body', postLogin, { requestBody: utf8('{"credentials":{"code":"X"}}'), method: 'POST', target: '/auth/login' });
  const swapped = (name, why, request, requestHeaders, body = appContextBody) => add(name, why, request, answer({ request, body, signed: { requestHeaders } }), 'bad_signature');
  swapped('bad_signature_credentials_user', "a proxy swapped in a paying user's username and password: the answer is that user's", legacyContext, PAYING_USER);
  swapped('bad_signature_credentials_bearer', "a proxy swapped in a paying user's session token", getContext, { authorization: PAYING_SESSION });
  swapped('bad_signature_credentials_license', "a proxy swapped in another license code", licenseContext, { 'x-api-license-code': 'PAID-9999-8888' });
  swapped('bad_signature_credentials_lease', "a lease answer for a paying user's credentials under this request's nonce", postLease, { ...PAYING_USER, ...HWID }, utf8('lease'));
  swapped('bad_signature_credentials_hardware_id', 'a lease answer for another hardware id', postLease, { ...FREE_USER, 'x-hardware-id': 'hw-paying-machine' }, utf8('lease'));
  swapped('bad_signature_credentials_added', 'the client sent no credential header; the answer was signed for a session', req('GET', '/app_context'), { authorization: SESSION });
  swapped('bad_signature_credentials_removed', 'the client sent a session; the answer was signed for a request without one (an anonymous answer)', getContext, {});
  const lateT = answer({ t: T0 + 3600_001, request: getContext, body: appContextBody });
  add('bad_signature_t', 't in the header differs from the t signed', getContext, withHeader(lateT, 'tollgate-signature', sigOf(lateT).replace(`t=${T0 + 3600_001}`, `t=${T0 + 3600_000}`)), 'bad_signature');
  add('bad_signature_emulator_key', "an emulator replaying the real certificate with its own key", getContext, answer({ key: { ...evil, kid: k1.kid }, request: getContext, body: appContextBody }), 'bad_signature');
  add('bad_signature_flipped', 'one bit of the signature changed', getContext, withHeader(ok, 'tollgate-signature', `v1; kid=${kid}; t=${t}; sig=${flipSig(sig)}`), 'bad_signature');
  add('bad_signature_download_file', 'the assembled file differs from the file signed', download, downloadAnswer(200, undefined, utf8('another file')), 'bad_signature', { download: { file: FILE } });
  add('bad_signature_download_range', 'the Content-Range received differs from the one signed', download, downloadAnswer(206, `bytes 10-${FILE.length - 1}/${FILE.length}`, FILE, `bytes 0-${FILE.length - 1}/${FILE.length}`), 'bad_signature', { download: { file: FILE } });

  // Issue 24 and 25: answers carrying entitlements, trials, seats and device resets are signed like every other.
  // `entitlements` / `is_trial`: what has() and isTrial() see online once such an answer verified (nothing otherwise).
  const entitledContext = utf8(JSON.stringify({
    application: { id: APP_ID, name: 'Game', variables: [], files: [] },
    user: { id: 'c5e1a7d3-2b4f-4c6e-8a9b-0d1e2f3a4b5c', username: 'alice', membership: { is_active: true, is_lifetime: false, active_until: '2026-02-01T00:00:00.000Z', entitlements: ['export-pdf', 'pro'] } },
    server_time: '2026-01-01T01:00:00.000Z',
  }));
  const entitledOk = answer({ request: getContext, body: entitledContext });
  add('ok_entitlements', 'GET /app_context whose user carries membership.entitlements', getContext, entitledOk, 'ok', { entitlements: ['export-pdf', 'pro'], is_trial: false });
  const forgedEntitlements = utf8(entitledContext.toString('utf8').replace('"export-pdf","pro"', '"export-pdf","pro","studio"'));
  add('bad_signature_entitlement_added', 'an entitlement added to the body after signing: refused, has() grants nothing', getContext, { ...entitledOk, body: forgedEntitlements }, 'bad_signature', { entitlements: [], is_trial: false });
  add('missing_signature_entitlements', 'the same body unsigned (a proxy page claiming pro): refused, has() grants nothing', getContext, without(without(entitledOk, 'tollgate-key-cert'), 'tollgate-signature'), 'missing_signature', { entitlements: [], is_trial: false });
  const trialRequest = req('POST', '/trial', utf8(JSON.stringify({ hardware_id: 'hw-1f2e3d', email: 'alice@example.com' })));
  const trialBody = utf8(JSON.stringify({ session_token: 'tg_sess_trial0123456789', user: { id: 'd1e2f3a4-b5c6-4d7e-8f90-a1b2c3d4e5f6', username: 'trial-1f2e3d', membership: { is_active: true, is_lifetime: false, active_until: '2026-01-15T01:00:00.000Z', entitlements: ['pro'], is_trial: true } } }));
  add('ok_trial', 'POST /trial: the session and a trial user (is_trial true, the trial\'s entitlements)', trialRequest, answer({ request: trialRequest, body: trialBody }), 'ok', { entitlements: ['pro'], is_trial: true });
  const seatHeaders = { authorization: SESSION, ...HWID };
  const seatBody = (expires) => utf8(JSON.stringify({ seat: { id: '5f0c3b2a-9d8e-4f7a-b6c5-d4e3f2a1b0c9', checked_out_at: '2026-01-01T01:00:00.000Z', expires_at: expires, heartbeat_seconds: 300 }, seats: { max: 5, in_use: 2 }, server_time: '2026-01-01T01:00:00.000Z' }));
  const checkout = req('POST', '/seats', utf8(''), seatHeaders);
  add('ok_seat_checkout', 'POST /seats: the seat, its expiry and heartbeat interval, the pool', checkout, answer({ request: checkout, body: seatBody('2026-01-01T01:05:00.000Z') }), 'ok');
  const beat = req('POST', '/seats/heartbeat', utf8(''), seatHeaders);
  add('ok_seat_heartbeat', 'POST /seats/heartbeat: the same shape, the expiry moved on', beat, answer({ request: beat, body: seatBody('2026-01-01T01:05:00.000Z') }), 'ok');
  add('ok_seat_not_found', 'POST /seats/heartbeat answered 404 seat_not_found (signed): the SDK reports the seat lost', beat, answer({ request: beat, status: 404, body: utf8(JSON.stringify({ detail: 'This device holds no seat', code: 'seat_not_found' })) }), 'ok');
  add('bad_signature_seat_extended', "a heartbeat answer whose expires_at was moved later after signing", beat, { ...answer({ request: beat, body: seatBody('2026-01-01T01:05:00.000Z') }), body: seatBody('2026-01-01T09:05:00.000Z') }, 'bad_signature');
  add('bad_signature_seat_other_device', "a heartbeat answer signed for another device's request", beat, answer({ request: beat, body: seatBody('2026-01-01T01:05:00.000Z'), signed: { requestHeaders: { authorization: SESSION, 'x-hardware-id': 'hw-another-machine' } } }), 'bad_signature');
  const release = req('DELETE', '/seats', utf8(''), seatHeaders);
  add('ok_seat_release', 'DELETE /seats: released', release, answer({ request: release, body: utf8(JSON.stringify({ released: true, server_time: '2026-01-01T01:00:00.000Z' })) }), 'ok',
    { seat_release: { released: true, held_until: null } });
  // An offline lease holds the seat: not released before the lease's exp, held_until says when it frees up.
  const heldBody = (heldUntil) => utf8(JSON.stringify({ released: false, server_time: '2026-01-01T01:00:00.000Z', held_until: heldUntil }));
  const held = answer({ request: release, body: heldBody('2026-01-02T01:00:00.000Z') });
  add('ok_seat_release_held', 'DELETE /seats of a seat an offline lease holds: released false, held_until the lease\'s exp', release, held, 'ok',
    { seat_release: { released: false, held_until: '2026-01-02T01:00:00.000Z' } });
  add('bad_signature_seat_held_until_moved', 'held_until moved earlier after signing (a proxy claiming the seat frees up now): refused', release,
    { ...held, body: heldBody('2026-01-01T01:00:00.000Z') }, 'bad_signature', { seat_release: null });
  const reset = req('POST', '/devices/reset', utf8(''), { authorization: SESSION });
  add('ok_reset_cooldown', 'POST /devices/reset answered 429 reset_cooldown with retry_after and last_reset_at (signed)', reset, answer({ request: reset, status: 429, body: utf8(JSON.stringify({ detail: 'Devices were reset less than 7 days ago', code: 'reset_cooldown', retry_after: 601200, last_reset_at: '2025-12-27T00:00:00.000Z' })), headers: { 'retry-after': '601200' } }), 'ok');
  return cases;
}

function flipSig(sig) {
  const bytes = Buffer.from(sig, 'base64url');
  bytes[10] ^= 0x80;
  return b64url(bytes);
}

/** The JSON form: bytes as base64 (standard, padded), headers by lower-case name. */
export function responsesFile() {
  return {
    app_id: APP_ID,
    root_public_key: root.publicKey,
    cases: responseCases().map((c) => ({
      name: c.name,
      why: c.why,
      request: {
        method: c.request.method, target: c.request.target, body_b64: c.request.body.toString('base64'), nonce: c.request.nonce, app_id: APP_ID,
        headers: c.request.headers, credentials_sha256: credentialsSha256(c.request.headers),
      },
      answer: { status: c.answer.status, headers: c.answer.headers, body_b64: c.answer.body.toString('base64') },
      ...(c.download && { download: { file_b64: c.download.file.toString('base64') } }),
      retired: c.retired ?? [],
      expect: c.expect,
      ...(c.entitlements && { entitlements: c.entitlements, is_trial: c.is_trial }),
    })),
  };
}
