/**
 * Every shared vector of sdk/test-vectors passes the SDK's verifier. The
 * vectors were generated from docs/signing.md independently of this code and
 * of the server's, so each side checks the other.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkCertificate } from '../src/certificate.js';
import { sha256Hex } from '../src/crypto.js';
import { checkLease, liveEntitlements } from '../src/lease.js';
import type { SeatRelease } from '../src/api-types.js';
import { credentialHeadersSha256, downloadLine, verifyAnswer } from '../src/verify.js';

const dir = join(import.meta.dirname, '../../test-vectors');
const load = (name: string) => JSON.parse(readFileSync(join(dir, name), 'utf8'));
const bytes = (b64: string) => new Uint8Array(Buffer.from(b64, 'base64'));

describe('shared test vectors', () => {
  it('are what generate.mjs writes (nobody edited them by hand)', () => {
    expect(() => execFileSync(process.execPath, [join(dir, 'generate.mjs'), '--check'], { stdio: 'pipe' })).not.toThrow();
  });

  const certs = load('certificates.json');
  it.each(certs.cases.map((c: { name: string }) => [c.name, c]))('certificate %s', async (_name, c) => {
    expect(await checkCertificate(c.certificate, { appId: certs.app_id, rootPublicKey: certs.root_public_key }, c.at)).toBe(c.expect);
  });

  const responses = load('responses.json');
  it.each(responses.cases.map((c: { name: string }) => [c.name, c]))('answer %s', async (_name, c) => {
    const body = bytes(c.answer.body_b64);
    const h = c.answer.headers;
    const responseLine = c.download ? downloadLine(await sha256Hex(bytes(c.download.file_b64)), h['content-range']) : await sha256Hex(body);
    // The credential headers as this SDK puts them on the wire: text as its UTF-8 bytes, one char per byte.
    const wire = Object.fromEntries(Object.entries(c.request.headers as Record<string, string>).map(([k, v]) => [k, Buffer.from(v, 'utf8').toString('latin1')]));
    const credentialsSha256 = await credentialHeadersSha256(wire);
    expect(credentialsSha256).toBe(c.request.credentials_sha256);
    const request = { method: c.request.method, target: c.request.target, body: bytes(c.request.body_b64), nonce: c.request.nonce, credentialsSha256 };
    const pinned = { appId: c.request.app_id, rootPublicKey: responses.root_public_key };
    const check = await verifyAnswer(pinned, new Set(c.retired), request, { status: c.answer.status, signature: h['tollgate-signature'], certificate: h['tollgate-key-cert'], responseLine });
    expect(check.verdict).toBe(c.expect);
    // Issue 24: what has() sees once the answer is in: the user's entitlements when it verified, nothing otherwise.
    if (c.entitlements !== undefined) {
      const user = check.verdict === 'ok' ? JSON.parse(Buffer.from(body).toString('utf8')).user : null;
      expect([...(user?.membership.entitlements ?? [])].sort()).toEqual(c.entitlements);
      expect(user?.membership.is_trial === true).toBe(c.is_trial);
    }
    // Issue 25: what releaseSeat() returns once a DELETE /seats answer verified (held_until: a lease holds the seat).
    if (c.seat_release !== undefined) {
      const release = check.verdict === 'ok' ? (JSON.parse(Buffer.from(body).toString('utf8')) as SeatRelease) : null;
      expect(release && { released: release.released, held_until: release.held_until ?? null }).toEqual(c.seat_release);
    }
  });

  const leases = load('leases.json');
  it.each(leases.cases.map((c: { name: string }) => [c.name, c]))('lease %s', async (_name, c) => {
    const check = await checkLease(c.lease, {
      pinned: { appId: leases.app_id, rootPublicKey: leases.root_public_key },
      retired: new Set(c.retired),
      hardwareId: c.hardware_id,
      state: c.state,
      now: c.now,
    });
    expect(check.verdict).toBe(c.expect);
    if (c.renew_due !== undefined) expect(check.renewDue).toBe(c.renew_due);
    // Issue 24: the entitlements has() sees offline at `now`, and is_trial (an older lease: none, false).
    if (c.expect === 'ok') {
      expect(liveEntitlements(check.payload!, c.now).sort()).toEqual(c.entitlements);
      expect(check.payload!.is_trial ?? false).toBe(c.is_trial);
    }
  });

  it('cover every verdict of docs/signing.md', () => {
    const seen = (file: { cases: { expect: string }[] }) => new Set(file.cases.map((c) => c.expect));
    expect([...seen(responses)].sort()).toEqual(
      ['ok', 'missing_signature', 'malformed_signature', 'bad_certificate', 'wrong_app', 'kid_mismatch', 'key_retired', 'key_expired', 'bad_signature'].sort(),
    );
    expect([...seen(leases)].sort()).toEqual(
      ['ok', 'malformed', 'bad_certificate', 'wrong_app', 'bad_signature', 'key_expired', 'key_retired', 'hardware_mismatch', 'superseded', 'dropped', 'clock_rollback', 'expired', 'runtime_exhausted'].sort(),
    );
  });
});
