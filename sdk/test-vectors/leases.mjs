/** leases.json: lease files, the client's state and clock, and the offline verdict of docs/signing.md. */
import { DAY, b64url, ed25519, encodeJson, hwidHash, leaseFile, leaseInput, utf8 } from './lib.mjs';
import {
  APP_ID, OTHER_APP_ID, T0, evil, evilCertOtherRoot, flip, k1, k1Cert, k1CertEncoded, k1CertOtherApp, k1Fields, rawCert, root,
} from './fixtures.mjs';

const HARDWARE_ID = 'hw-6b1f0c2e9d4a7358';
const GRACE_S = 7 * 24 * 3600;
const RENEW_S = 24 * 3600;
const IAT = T0 + 10 * DAY;
const MIN5 = 5 * 60_000;

function payloadOf(over = {}) {
  const iat = over.iat ?? IAT;
  const activeUntil = 'active_until' in over ? over.active_until : iat + 30 * DAY;
  const p = {
    lease_id: '9a4c2f1e-7b3d-4e8a-b5c6-1d2e3f4a5b6c',
    seq: 3,
    app_id: APP_ID,
    user_id: 'c5e1a7d3-2b4f-4c6e-8a9b-0d1e2f3a4b5c',
    hwid_hash: hwidHash(APP_ID, HARDWARE_ID),
    is_lifetime: activeUntil === null,
    active_until: activeUntil,
    iat,
    renew_after: iat + RENEW_S * 1000,
    exp: Math.min(iat + GRACE_S * 1000, activeUntil ?? Infinity),
    max_offline_runtime_s: GRACE_S,
  };
  return { ...p, ...over };
}

/** Builds the lease JSON: `payload` is what is signed unless `signedBytes` says otherwise. */
function lease({ payload = payloadOf(), key = k1, kid = key.kid, cert = k1CertEncoded, signedBytes, prefix = true, json } = {}) {
  const bytes = utf8(JSON.stringify(payload));
  const toSign = signedBytes ?? bytes;
  const sig = b64url(ed25519(key, prefix ? leaseInput(toSign) : toSign));
  return json ?? { v: 1, kid, cert, payload: b64url(bytes), sig };
}

/** A payload edited after signing: the same fields with some replaced. */
const ENTITLED_EDIT = (p, over) => ({ ...p, ...over });

const fresh = { highest_trusted_time: 0, highest_seq: 0, runtime_used_ms: 0, dropped: false, max_server_time: 0 };
const NOW = IAT + DAY / 2;

function entitledAt(file, now) {
  const body = file.split(/\r?\n/).filter((l) => l && !l.startsWith('-----')).join('');
  const payload = JSON.parse(Buffer.from(JSON.parse(Buffer.from(body, 'base64url').toString('utf8')).payload, 'base64url').toString('utf8'));
  const entitlements = (payload.entitlements ?? []).filter((e) => e.until === null || now < e.until).map((e) => e.code).sort();
  return { entitlements, is_trial: payload.is_trial ?? false };
}

/** Issue 24's fields: the user's entitlements at iat ({code, until}, sorted by code) and is_trial. */
const ENTITLED = { entitlements: [{ code: 'export-pdf', until: IAT + DAY }, { code: 'pro', until: null }], is_trial: false };

export function leaseCases() {
  const cases = [];
  // Every ok case also says what has() must see offline at `now` (issue 24): `entitlements`, the codes present with
  // `until` null or now < until (sorted), and `is_trial`; a lease without the fields (an older server's) has none.
  const add = (name, why, file, expect, { state = {}, now = NOW, hardware_id = HARDWARE_ID, retired = [], renew_due } = {}) =>
    cases.push({
      name, why, lease: file, hardware_id, state: { ...fresh, ...state }, now, retired, expect, ...(renew_due !== undefined && { renew_due }),
      ...(expect === 'ok' && entitledAt(file, now)),
    });
  const good = lease();
  const file = (l) => leaseFile(l);
  const p = payloadOf();

  add('ok', 'a fresh lease, half a day after issue', file(good), 'ok', { renew_due: false });
  add('ok_renew_due', 'past renew_after: still valid offline, the app should go online', file(good), 'ok', { now: p.renew_after, renew_due: true });
  add('ok_lifetime', 'a lifetime membership: active_until null, exp is iat + grace', file(lease({ payload: payloadOf({ active_until: null }) })), 'ok', { renew_due: false });
  add('ok_crlf', 'the same file with CRLF line ends (edited on Windows)', leaseFile(good, '\r\n'), 'ok', { renew_due: false });
  add('ok_state_caught_up', 'state from earlier use: same seq, time and runtime below their limits', file(good), 'ok', { state: { highest_trusted_time: NOW + MIN5, highest_seq: 3, runtime_used_ms: GRACE_S * 1000 - 1 }, renew_due: false });
  add('ok_rollback_limit', 'the clock exactly 5 minutes behind the highest trusted time is tolerated', file(good), 'ok', { state: { highest_trusted_time: NOW + MIN5 }, renew_due: false });

  const armour = (body) => ['-----BEGIN TOLLGATE LEASE-----', body, '-----END TOLLGATE LEASE-----', ''].join('\n');
  add('malformed_no_armour', 'the base64url without BEGIN/END lines', encodeJson(good), 'malformed');
  add('malformed_not_base64url', 'the armour around text that is not base64url', armour('!!!! not a lease !!!!'), 'malformed');
  add('malformed_not_json', 'base64url of text that is not JSON', armour(b64url(utf8('hello'))), 'malformed');
  add('malformed_missing_field', 'no sig', file({ v: 1, kid: good.kid, cert: good.cert, payload: good.payload }), 'malformed');
  add('malformed_extra_field', 'a field the format does not have', file({ ...good, note: 1 }), 'malformed');
  add('malformed_version', 'v must be 1', file({ ...good, v: 2 }), 'malformed');
  add('malformed_payload_not_json', 'the payload is not JSON', file(lease({ json: { ...good, payload: b64url(utf8('{')) } })), 'malformed');
  const badPayload = (name, why, over) => {
    const payload = { ...payloadOf(), ...over };
    for (const [k, v] of Object.entries(over)) if (v === undefined) delete payload[k];
    add(name, why, file(lease({ payload })), 'malformed');
  };
  badPayload('malformed_payload_seq_string', 'seq must be an integer', { seq: '3' });
  badPayload('malformed_payload_missing_exp', 'no exp in the payload', { exp: undefined });
  badPayload('malformed_payload_extra_field', 'a payload field the format does not have', { plan: 'pro' });
  badPayload('malformed_payload_lifetime_type', 'is_lifetime must be a boolean', { is_lifetime: 1 });

  add('bad_certificate_other_root', "an emulator's lease: its certificate is signed by another root", file(lease({ key: evil, cert: evilCertOtherRoot })), 'bad_certificate');
  add('bad_certificate_garbled', 'a certificate that does not decode', file({ ...good, cert: 'AAAA' }), 'bad_certificate');
  add('bad_certificate_tampered', 'the certificate with not_after extended after signing', file({ ...good, cert: rawCert({ ...k1Cert, not_after: k1Cert.not_after + DAY }) }), 'bad_certificate');
  add('wrong_app_certificate', "another app's certificate (same root)", file(lease({ cert: k1CertOtherApp })), 'wrong_app');
  add('wrong_app_payload', "this app's key, but a payload for another app", file(lease({ payload: payloadOf({ app_id: OTHER_APP_ID }) })), 'wrong_app');
  add('key_retired', 'the lease was signed by a kid the client has learned is retired', file(good), 'key_retired', { retired: [k1.kid] });
  const lateIat = k1Fields.not_after + 1;
  add('key_expired', 'iat after the certificate\'s not_after', file(lease({ payload: payloadOf({ iat: lateIat }) })), 'key_expired', { now: lateIat + 1000 });
  // Amendment B: a lease never outlives the key that signed it, nor its own runtime budget.
  badPayload('malformed_exp_before_iat', 'exp before iat (signed so)', { exp: IAT - 1 });
  badPayload('malformed_exp_beyond_budget', 'exp - iat longer than max_offline_runtime_s (signed so)', { max_offline_runtime_s: 3600, exp: IAT + 3600_000 + 1 });
  const endIat = k1Fields.not_after - DAY;
  add('ok_exp_at_not_after', "exp exactly at the certificate's not_after (the server caps it there)", file(lease({ payload: payloadOf({ iat: endIat, exp: k1Fields.not_after }) })), 'ok', { now: endIat + 3600_000, renew_due: false });
  add('key_expired_exp_after_not_after', "iat inside the certificate's validity, exp 1 ms after its not_after", file(lease({ payload: payloadOf({ iat: endIat, exp: k1Fields.not_after + 1 }) })), 'key_expired', { now: endIat + 3600_000 });
  const decade = 10 * 365 * DAY;
  add('key_expired_long_forgery', 'a leaked key: iat inside its validity, exp and the runtime budget 10 years later', file(lease({ payload: payloadOf({ iat: endIat, exp: endIat + decade, active_until: null, max_offline_runtime_s: decade / 1000 }) })), 'key_expired', { now: endIat + 3600_000 });
  add('key_expired_server_time', "the client has verified a server time more than 5 minutes after the certificate's not_after", file(good), 'key_expired', { state: { max_server_time: k1Fields.not_after + MIN5 + 1 } });
  add('ok_server_time_tolerance', "a verified server time exactly 5 minutes after the certificate's not_after is tolerated", file(good), 'ok', { state: { max_server_time: k1Fields.not_after + MIN5 }, renew_due: false });
  const short = payloadOf({ active_until: IAT + 2 * DAY });
  add('bad_signature_exp_extended', 'exp moved later after signing (from the membership end to the end of the grace)', file(lease({ payload: { ...short, exp: IAT + GRACE_S * 1000 }, signedBytes: utf8(JSON.stringify(short)) })), 'bad_signature');
  add('bad_signature_flipped', 'one bit of the signature changed', file({ ...good, sig: flip(good.sig) }), 'bad_signature');
  add('bad_signature_no_prefix', 'signed over the payload without the tollgate/lease/v1 line', file(lease({ prefix: false })), 'bad_signature');
  add('bad_signature_emulator_key', 'the real certificate with an emulator\'s key', file(lease({ key: evil, kid: k1.kid })), 'bad_signature');
  add('bad_signature_kid_mismatch', "the lease's kid is not its certificate's", file({ ...good, kid: 'k2_2026-03' }), 'bad_signature');

  add('hardware_mismatch', 'the lease was issued to another machine', file(good), 'hardware_mismatch', { hardware_id: 'hw-another-machine' });
  add('superseded', 'a newer lease (seq 4) was seen on this device', file(good), 'superseded', { state: { highest_seq: 4 } });
  add('dropped', 'an online answer (a ban) told the client to drop its lease', file(good), 'dropped', { state: { highest_seq: 3, dropped: true } });
  add('clock_rollback_state', 'the clock more than 5 minutes behind the highest trusted time', file(good), 'clock_rollback', { state: { highest_trusted_time: NOW + MIN5 + 1 } });
  add('clock_rollback_iat', "the clock more than 5 minutes before the lease's own iat", file(good), 'clock_rollback', { now: IAT - MIN5 - 1 });
  add('expired_at_exp', 'now equal to exp', file(good), 'expired', { now: p.exp });
  add('expired_membership', 'exp is the membership end, before iat + grace', file(lease({ payload: payloadOf({ active_until: IAT + 2 * DAY }) })), 'expired', { now: IAT + 2 * DAY });
  add('runtime_exhausted', 'the offline runtime used reached max_offline_runtime_s', file(good), 'runtime_exhausted', { state: { runtime_used_ms: GRACE_S * 1000 } });

  // Issue 24: entitlements and trials in the lease.
  const entitled = lease({ payload: payloadOf(ENTITLED) });
  add('ok_entitlements', 'a lease with entitlements: export-pdf until a day after iat, pro with no end', file(entitled), 'ok', { renew_due: false });
  add('ok_entitlement_ended', "past export-pdf's until: the lease is good, only pro is held", file(entitled), 'ok', { now: IAT + DAY, renew_due: true });
  const trialEnd = IAT + 3 * DAY;
  add('ok_trial', "a trial user's lease: is_trial, exp at the trial's end", file(lease({ payload: payloadOf({ active_until: trialEnd, entitlements: [{ code: 'pro', until: trialEnd }], is_trial: true }) })), 'ok', { renew_due: false });
  add('ok_entitlements_none', 'the fields present and empty', file(lease({ payload: payloadOf({ entitlements: [], is_trial: false }) })), 'ok', { renew_due: false });
  const signedPlain = payloadOf({ entitlements: [{ code: 'export-pdf', until: IAT + DAY }], is_trial: false });
  add('bad_signature_entitlement_added', 'pro added to the entitlements after signing', file(lease({ payload: ENTITLED_EDIT(signedPlain, { entitlements: [...signedPlain.entitlements, { code: 'pro', until: null }] }), signedBytes: utf8(JSON.stringify(signedPlain)) })), 'bad_signature');
  add('bad_signature_entitlement_until', "export-pdf's until removed (made endless) after signing", file(lease({ payload: ENTITLED_EDIT(signedPlain, { entitlements: [{ code: 'export-pdf', until: null }] }), signedBytes: utf8(JSON.stringify(signedPlain)) })), 'bad_signature');
  add('bad_signature_trial_hidden', 'is_trial turned false after signing', file(lease({ payload: payloadOf({ entitlements: [], is_trial: false }), signedBytes: utf8(JSON.stringify(payloadOf({ entitlements: [], is_trial: true }))) })), 'bad_signature');
  badPayload('malformed_entitlements_not_list', 'entitlements must be an array', { entitlements: 'pro', is_trial: false });
  badPayload('malformed_entitlement_code_type', 'an entitlement code must be a string', { entitlements: [{ code: 1, until: null }], is_trial: false });
  badPayload('malformed_entitlement_until_type', 'until must be an integer or null', { entitlements: [{ code: 'pro', until: '2026' }], is_trial: false });
  badPayload('malformed_entitlement_extra_field', 'an entitlement has exactly code and until', { entitlements: [{ code: 'pro', until: null, tier: 2 }], is_trial: false });
  badPayload('malformed_trial_type', 'is_trial must be a boolean', { entitlements: [], is_trial: 'yes' });
  badPayload('malformed_entitlements_alone', 'entitlements without is_trial (both or neither)', { entitlements: [] });
  badPayload('malformed_trial_alone', 'is_trial without entitlements (both or neither)', { is_trial: false });

  add('order_hardware_before_expired', 'another machine and expired: hardware_mismatch comes first', file(good), 'hardware_mismatch', { hardware_id: 'hw-x', now: p.exp + 1 });
  add('order_superseded_before_dropped', 'superseded and dropped: superseded comes first', file(good), 'superseded', { state: { highest_seq: 9, dropped: true } });
  add('order_rollback_before_expired', 'a set-back clock and expired: clock_rollback comes first', file(good), 'clock_rollback', { now: p.exp, state: { highest_trusted_time: p.exp + DAY } });
  add('order_expired_before_runtime', 'expired and runtime spent: expired comes first', file(good), 'expired', { now: p.exp, state: { runtime_used_ms: GRACE_S * 1000 } });
  return cases;
}

export function leasesFile() {
  return { app_id: APP_ID, root_public_key: root.publicKey, hardware_id: HARDWARE_ID, cases: leaseCases() };
}
