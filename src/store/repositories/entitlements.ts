import type { Queryable } from '../db.js';
import { nullableNumber } from '../rows.js';
import type { EntitlementGrant } from '../records.js';

export type GrantSource = 'license' | 'operator' | 'trial';

export interface NewGrant {
  id: string;
  appId: string;
  userId: string;
  code: string;
  source: GrantSource;
  licenseId: string | null;
  endsAt: number | null;
  createdAt: number;
}

export interface GrantRow extends EntitlementGrant {
  id: string;
  source: GrantSource;
  licenseId: string | null;
  createdAt: number;
}

/** Entitlement grants: one row per (grant, code), live while ends_at is NULL or ahead (src/domain/entitlements.ts). */
export function entitlementsRepository(q: Queryable) {
  return {
    async insert(g: NewGrant): Promise<void> {
      await q.run(
        'INSERT INTO entitlement_grants (id, app_id, user_id, code, source, license_id, ends_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
        [g.id, g.appId, g.userId, g.code, g.source, g.licenseId, g.endsAt, g.createdAt],
      );
    },

    /** The grants of several users at once (a page of the admin list), by user id. */
    async grantsOf(userIds: readonly string[]): Promise<Map<string, EntitlementGrant[]>> {
      const out = new Map<string, EntitlementGrant[]>();
      if (userIds.length === 0) return out;
      const rows = await q.all(
        `SELECT user_id, code, ends_at FROM entitlement_grants WHERE user_id IN (${userIds.map(() => '?').join(', ')}) ORDER BY code, ends_at`,
        userIds,
      );
      for (const r of rows) {
        const id = r.user_id as string;
        let list = out.get(id);
        if (!list) out.set(id, (list = []));
        list.push({ code: r.code as string, until: nullableNumber(r.ends_at) });
      }
      return out;
    },

    /** Every grant of one user, with where it came from (the admin user view). */
    async listFor(userId: string): Promise<GrantRow[]> {
      const rows = await q.all(
        'SELECT id, code, source, license_id, ends_at, created_at FROM entitlement_grants WHERE user_id = ? ORDER BY code, created_at, id',
        [userId],
      );
      return rows.map((r) => ({
        id: r.id as string, code: r.code as string, source: r.source as GrantSource, licenseId: (r.license_id as string | null) ?? null,
        until: nullableNumber(r.ends_at), createdAt: Number(r.created_at),
      }));
    },

    /** The operator takes a code away: every grant of it the user holds ends now (history kept). Returns how many were live. */
    async endCode(userId: string, code: string, now: number): Promise<number> {
      return q.run('UPDATE entitlement_grants SET ends_at = ? WHERE user_id = ? AND code = ? AND (ends_at IS NULL OR ends_at > ?)', [now, userId, code, now]);
    },

    /** A lifetime revoked: the license grants that never ended end now; operator grants are the operator's own. */
    async endOpenLicenseGrants(userId: string, now: number): Promise<void> {
      await q.run("UPDATE entitlement_grants SET ends_at = ? WHERE user_id = ? AND source = 'license' AND ends_at IS NULL", [now, userId]);
    },

    /** A refund or a revoked lifetime: the license's grants to this user still live end now. */
    async endLicenseGrants(licenseId: string, userId: string, now: number): Promise<void> {
      await q.run("UPDATE entitlement_grants SET ends_at = ? WHERE license_id = ? AND user_id = ? AND source = 'license' AND (ends_at IS NULL OR ends_at > ?)", [now, licenseId, userId, now]);
    },

    /** A trial converted: its grants end now. */
    async endTrialGrants(userId: string, now: number): Promise<void> {
      await q.run("UPDATE entitlement_grants SET ends_at = ? WHERE user_id = ? AND source = 'trial' AND (ends_at IS NULL OR ends_at > ?)", [now, userId, now]);
    },

    /** The grants a license made, with their ends (an applied template rewrites them keeping those ends). */
    async ofLicense(licenseId: string): Promise<{ id: string; userId: string; code: string; until: number | null }[]> {
      const rows = await q.all("SELECT id, user_id, code, ends_at FROM entitlement_grants WHERE license_id = ? AND source = 'license' ORDER BY created_at, id", [licenseId]);
      return rows.map((r) => ({ id: r.id as string, userId: r.user_id as string, code: r.code as string, until: nullableNumber(r.ends_at) }));
    },

    /** A store's renewal: one grant's new end (src/domain/licenses.ts renewRedemption). */
    async setEnd(id: string, endsAt: number | null): Promise<void> {
      await q.run('UPDATE entitlement_grants SET ends_at = ? WHERE id = ?', [endsAt, id]);
    },

    /** The grants a license made (an applied template rewrites them). */
    async deleteOfLicense(licenseId: string): Promise<void> {
      await q.run("DELETE FROM entitlement_grants WHERE license_id = ? AND source = 'license'", [licenseId]);
    },
  };
}

export type EntitlementsRepository = ReturnType<typeof entitlementsRepository>;
