import type { Queryable, Row } from '../db.js';
import { nullableNumber } from '../rows.js';
import { cursorParams, toPage, type Cursor } from '../pagination.js';
import type { Page } from '../records.js';

/** Stored states; `expired` is derived when read (an active key past its not_after). */
export type StoredKeyStatus = 'pending' | 'active' | 'retired';

export interface SigningKeyRecord {
  kid: string;
  appId: string;
  /** base64url of the 32 raw bytes. */
  publicKey: string;
  /** PKCS#8 DER, base64, or that sealed (domain/signing/seal.ts); null once retired (it can never sign again). Never leaves the domain's signer. */
  privateKey: string | null;
  /** The encoded certificate (docs/signing.md); null while pending. */
  certificate: string | null;
  notBefore: number | null;
  notAfter: number | null;
  status: StoredKeyStatus;
  createdAt: number;
  retiredAt: number | null;
}

const COLUMNS = 'kid, app_id, public_key, private_key, certificate, not_before, not_after, status, created_at, retired_at';
// Keyset pagination on (created_at, kid): the table's key is `kid`, not `id`.
const AFTER_CURSOR = '(created_at > ? OR (created_at = ? AND kid > ?))';

function toKey(r: Row): SigningKeyRecord {
  return {
    kid: r.kid as string,
    appId: r.app_id as string,
    publicKey: r.public_key as string,
    privateKey: (r.private_key as string | null) ?? null,
    certificate: (r.certificate as string | null) ?? null,
    notBefore: nullableNumber(r.not_before),
    notAfter: nullableNumber(r.not_after),
    status: r.status as StoredKeyStatus,
    createdAt: Number(r.created_at),
    retiredAt: nullableNumber(r.retired_at),
  };
}

export function signingKeysRepository(q: Queryable) {
  return {
    async insert(k: SigningKeyRecord): Promise<void> {
      await q.run(`INSERT INTO signing_keys (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, [
        k.kid, k.appId, k.publicKey, k.privateKey, k.certificate, k.notBefore, k.notAfter, k.status, k.createdAt, k.retiredAt,
      ]);
    },

    async find(appId: string, kid: string): Promise<SigningKeyRecord | undefined> {
      const r = await q.one(`SELECT ${COLUMNS} FROM signing_keys WHERE app_id = ? AND kid = ?`, [appId, kid]);
      return r && toKey(r);
    },

    /** Every key of the app, oldest first: what the key ring cache and the client key list are built from. */
    async all(appId: string): Promise<SigningKeyRecord[]> {
      const rows = await q.all(`SELECT ${COLUMNS} FROM signing_keys WHERE app_id = ? ORDER BY created_at, kid`, [appId]);
      return rows.map(toKey);
    },

    async list(appId: string, cursor: Cursor | null, limit: number): Promise<Page<SigningKeyRecord>> {
      const rows = await q.all(`SELECT ${COLUMNS} FROM signing_keys WHERE app_id = ? AND ${AFTER_CURSOR} ORDER BY created_at, kid LIMIT ?`, [
        appId, ...cursorParams(cursor), limit + 1,
      ]);
      return toPage(rows, limit, toKey, (r) => ({ at: Number(r.created_at), id: r.kid as string }));
    },

    /** Whether the app has a certified, unretired key valid at `now` (one that can sign). */
    async hasUsable(appId: string, now: number): Promise<boolean> {
      const r = await q.one(
        `SELECT kid FROM signing_keys WHERE app_id = ? AND status = 'active' AND private_key IS NOT NULL AND not_before <= ? AND not_after > ? LIMIT 1`,
        [appId, now, now],
      );
      return r !== undefined;
    },

    /** Only a pending key takes a certificate (conditional update: two uploads cannot both win). */
    async certify(appId: string, kid: string, certificate: string, notBefore: number, notAfter: number): Promise<boolean> {
      const n = await q.run(
        `UPDATE signing_keys SET certificate = ?, not_before = ?, not_after = ?, status = 'active' WHERE app_id = ? AND kid = ? AND status = 'pending'`,
        [certificate, notBefore, notAfter, appId, kid],
      );
      return n === 1;
    },

    /** Retires the key and deletes its private key in the same statement, so it can never sign again. */
    async retire(appId: string, kid: string, now: number): Promise<boolean> {
      const n = await q.run(
        `UPDATE signing_keys SET status = 'retired', private_key = NULL, retired_at = ? WHERE app_id = ? AND kid = ? AND status <> 'retired'`,
        [now, appId, kid],
      );
      return n === 1;
    },

    /**
     * Deletes the private key of every key of the app whose not_after has passed (docs/signing.md, amendment C):
     * it can never sign again, and backups taken from now on stop holding it. Returns the kids forgotten.
     */
    async forgetEnded(appId: string, now: number): Promise<string[]> {
      const rows = await q.all(`SELECT kid FROM signing_keys WHERE app_id = ? AND private_key IS NOT NULL AND not_after <= ? ORDER BY created_at, kid`, [appId, now]);
      if (rows.length > 0) await q.run(`UPDATE signing_keys SET private_key = NULL WHERE app_id = ? AND private_key IS NOT NULL AND not_after <= ?`, [appId, now]);
      return rows.map((r) => r.kid as string);
    },

    /** Retires every certified key of the app (its root was replaced: their certificates no longer chain to it). */
    async retireCertified(appId: string, now: number): Promise<string[]> {
      const rows = await q.all(`SELECT kid FROM signing_keys WHERE app_id = ? AND status = 'active' ORDER BY created_at, kid`, [appId]);
      await q.run(`UPDATE signing_keys SET status = 'retired', private_key = NULL, retired_at = ? WHERE app_id = ? AND status = 'active'`, [now, appId]);
      return rows.map((r) => r.kid as string);
    },

    /** Every stored private key, of every app, in a stable order: what `tollgate reseal-keys` and the start-up report go through. */
    async privateKeys(): Promise<{ appId: string; kid: string; privateKey: string }[]> {
      const rows = await q.all('SELECT app_id, kid, private_key FROM signing_keys WHERE private_key IS NOT NULL ORDER BY app_id, created_at, kid');
      return rows.map((r) => ({ appId: r.app_id as string, kid: r.kid as string, privateKey: r.private_key as string }));
    },

    /** Replaces a stored private key only if it is still `before` (a concurrent retirement or reseal wins). */
    async replacePrivateKey(appId: string, kid: string, before: string, after: string): Promise<boolean> {
      return (await q.run('UPDATE signing_keys SET private_key = ? WHERE app_id = ? AND kid = ? AND private_key = ?', [after, appId, kid, before])) === 1;
    },

    async setRootPublicKey(appId: string, publicKey: string, now: number): Promise<boolean> {
      return (await q.run('UPDATE apps SET root_public_key = ?, updated_at = ? WHERE id = ?', [publicKey, now, appId])) === 1;
    },
  };
}

export type SigningKeysRepository = ReturnType<typeof signingKeysRepository>;
