/** certificates.json: encoded certificates and the verdict a client gives each at a time `at`. */
import { DAY, MAX_VALIDITY, b64url, certify, encodeJson, utf8 } from './lib.mjs';
import { APP_ID, T0, flip, k1, k1Cert, k1CertEncoded, k1CertOtherApp, k1Fields, k2CertEncoded, otherRoot, rawCert, root } from './fixtures.mjs';

const at = T0 + 3600_000;

export function certificateCases() {
  const c = (name, why, certificate, expect, when = at) => ({ name, why, certificate, at: when, expect });
  const cases = [
    c('ok', 'a certificate of the pinned app, signed by the pinned root, at a time inside its validity', k1CertEncoded, 'ok'),
    c('ok_second_key', 'the next signing key (rotation): the client pins only the root', k2CertEncoded, 'ok', T0 + 100 * DAY),
    c('ok_at_not_before', 'the validity includes not_before', k1CertEncoded, 'ok', k1Fields.not_before),
    c('ok_at_not_after', 'the validity includes not_after', k1CertEncoded, 'ok', k1Fields.not_after),
    c('ok_90_days_exactly', 'a validity of exactly 90 days is allowed', encodeJson(certify(root, { ...k1Fields, not_after: T0 + MAX_VALIDITY })), 'ok'),

    c('bad_other_root', "signed by another root (an emulator's): the pinned root does not verify it", rawCert(certify(otherRoot, k1Fields)), 'bad_certificate'),
    c('bad_sig_flipped', 'one bit of the root signature changed', rawCert({ ...k1Cert, sig: flip(k1Cert.sig) }), 'bad_certificate'),
    c('bad_kid_changed', 'the kid changed after signing (the verifier rebuilds the signed bytes from the fields)', rawCert({ ...k1Cert, kid: 'k9' }), 'bad_certificate'),
    c('bad_public_key_swapped', 'the public key replaced by another after signing', rawCert({ ...k1Cert, public_key: otherRoot.publicKey }), 'bad_certificate'),
    c('bad_not_after_extended', 'not_after moved one millisecond later after signing', rawCert({ ...k1Cert, not_after: k1Cert.not_after + 1 }), 'bad_certificate'),
    c('bad_extra_field', 'a field the format does not have', rawCert({ ...k1Cert, note: 'x' }), 'bad_certificate'),
    c('bad_missing_field', 'no not_before', rawCert({ v: 1, app_id: APP_ID, kid: k1.kid, public_key: k1.publicKey, not_after: k1Cert.not_after, sig: k1Cert.sig }), 'bad_certificate'),
    c('bad_version_2', 'v must be 1', rawCert({ ...k1Cert, v: 2 }), 'bad_certificate'),
    c('bad_version_string', 'v must be the number 1', rawCert({ ...k1Cert, v: '1' }), 'bad_certificate'),
    c('bad_not_before_string', 'times are JSON integers', rawCert({ ...k1Cert, not_before: String(k1Cert.not_before) }), 'bad_certificate'),
    c('bad_not_before_fraction', 'times are integers', rawCert({ ...k1Cert, not_before: k1Cert.not_before + 0.5 }), 'bad_certificate'),
    c('bad_kid_number', 'kid must be a string', rawCert({ ...k1Cert, kid: 7 }), 'bad_certificate'),
    c('bad_sig_short', 'sig must be 64 bytes', rawCert({ ...k1Cert, sig: b64url(Buffer.from(k1Cert.sig, 'base64url').subarray(0, 63)) }), 'bad_certificate'),
    c(
      'bad_public_key_short',
      'a correctly signed certificate whose public key is 31 bytes: not an Ed25519 key',
      rawCert(certify(root, { ...k1Fields, public_key: b64url(k1.publicRaw.subarray(0, 31)) })),
      'bad_certificate',
    ),
    c('bad_not_json', 'base64url of text that is not JSON', b64url(utf8('not json')), 'bad_certificate'),
    c('bad_json_array', 'a JSON array, not an object', b64url(utf8(JSON.stringify([k1Cert]))), 'bad_certificate'),
    c('bad_json_null', 'JSON null', b64url(utf8('null')), 'bad_certificate'),
    c('bad_empty', 'an empty certificate', '', 'bad_certificate'),
    c('bad_not_base64url', 'characters outside the base64url alphabet', '%%%not-base64url%%%', 'bad_certificate'),

    c('wrong_app', 'signed by the pinned root, but for another app', k1CertOtherApp, 'wrong_app'),

    c('expired_after', 'at is one millisecond after not_after', k1CertEncoded, 'key_expired', k1Fields.not_after + 1),
    c('expired_before', 'at is one millisecond before not_before', k1CertEncoded, 'key_expired', k1Fields.not_before - 1),
    c(
      'expired_too_long',
      'correctly signed, but valid for 90 days and 1 ms: longer than any certificate may be',
      encodeJson(certify(root, { ...k1Fields, not_after: T0 + MAX_VALIDITY + 1 })),
      'key_expired',
    ),
    c('expired_zero_length', 'not_after equal to not_before: the validity must be longer than 0', encodeJson(certify(root, { ...k1Fields, not_after: T0 })), 'key_expired', T0),
    c('expired_reversed', 'not_after before not_before', encodeJson(certify(root, { ...k1Fields, not_before: T0 + DAY, not_after: T0 })), 'key_expired', T0 + DAY / 2),
  ];
  return cases;
}
