import type { Queryable, Row } from '../db.js';
import { nullableNumber } from '../rows.js';
import { cursorParams, seekParam, toPage, type Cursor } from '../pagination.js';
import type { EntitlementGrant, Page, TemplateHolding, UserIpRecord, UserRecord } from '../records.js';
import { escapeLike } from './licenses.js';

const COLUMNS =
  'u.id, u.app_id, u.username, u.password_hash, u.signup_license_id, u.is_lifetime, u.active_until, u.device_count, u.created_at, l.code AS signup_code, t.ends_at AS trial_ends_at';
/**
 * Users with the code of their sign-up license, if any (license bans apply to license-only accounts),
 * and the end of their trial while it is not converted (trials.user_id is unique: one row at most).
 */
const FROM = 'users u LEFT JOIN licenses l ON l.id = u.signup_license_id LEFT JOIN trials t ON t.user_id = u.id AND t.converted_at IS NULL';

type UserRow = Omit<UserRecord, 'grants' | 'holdings'>;

function toUser(r: Row): UserRow {
  return {
    id: r.id as string,
    appId: r.app_id as string,
    username: r.username as string,
    passwordHash: (r.password_hash as string | null) ?? null,
    signupLicenseId: (r.signup_license_id as string | null) ?? null,
    signupCode: (r.signup_code as string | null) ?? null,
    isLifetime: Number(r.is_lifetime) === 1,
    activeUntil: nullableNumber(r.active_until),
    deviceCount: Number(r.device_count),
    createdAt: Number(r.created_at),
    trialEndsAt: nullableNumber(r.trial_ends_at),
  };
}

/** The users' grants and template holdings, in two statements for any number of users. */
async function complete(q: Queryable, users: UserRow[]): Promise<UserRecord[]> {
  if (users.length === 0) return [];
  const ids = users.map((u) => u.id);
  const marks = ids.map(() => '?').join(', ');
  const [grantRows, holdingRows] = await Promise.all([
    q.all(`SELECT user_id, code, ends_at FROM entitlement_grants WHERE user_id IN (${marks}) ORDER BY code, ends_at`, ids),
    q.all(
      `SELECT a.user_id, a.ends_at, l.max_devices, l.max_seats, l.heartbeat_seconds FROM activations a JOIN licenses l ON l.id = a.license_id
       WHERE a.user_id IN (${marks}) AND (l.max_devices IS NOT NULL OR l.max_seats IS NOT NULL OR l.heartbeat_seconds IS NOT NULL) ORDER BY a.occurred_at, a.id`,
      ids,
    ),
  ]);
  const grants = new Map<string, EntitlementGrant[]>();
  for (const r of grantRows) push(grants, r.user_id as string, { code: r.code as string, until: nullableNumber(r.ends_at) });
  const holdings = new Map<string, TemplateHolding[]>();
  for (const r of holdingRows) {
    push(holdings, r.user_id as string, {
      maxDevices: nullableNumber(r.max_devices), maxSeats: nullableNumber(r.max_seats), heartbeatSeconds: nullableNumber(r.heartbeat_seconds), until: nullableNumber(r.ends_at),
    });
  }
  return users.map((u) => ({ ...u, grants: grants.get(u.id) ?? [], holdings: holdings.get(u.id) ?? [] }));
}

function push<T>(map: Map<string, T[]>, key: string, value: T): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

async function one(q: Queryable, r: Row | undefined): Promise<UserRecord | undefined> {
  return r && (await complete(q, [toUser(r)]))[0];
}

export interface NewUser {
  id: string;
  appId: string;
  username: string;
  usernameKey: string;
  passwordHash: string | null;
  signupLicenseId: string | null;
  createdAt: number;
}

/** The admin list's filters besides the search. */
export interface UserFilter {
  /** Holds this entitlement at `now` (a live grant). */
  entitlement?: string;
  /** A trial user now (a running, unconverted trial). */
  trial?: boolean;
  now: number;
}

const NO_FILTER: UserFilter = { now: 0 };

function matching(appId: string, search: string | null, filter: UserFilter): { where: string; params: (string | number)[] } {
  let where = 'u.app_id = ?';
  const params: (string | number)[] = [appId];
  if (search) {
    where += " AND (u.username_key LIKE ? ESCAPE '\\' OR u.id = ?)";
    params.push('%' + escapeLike(search) + '%', search);
  }
  if (filter.entitlement !== undefined) {
    where += ' AND EXISTS (SELECT 1 FROM entitlement_grants g WHERE g.user_id = u.id AND g.code = ? AND (g.ends_at IS NULL OR g.ends_at > ?))';
    params.push(filter.entitlement, filter.now);
  }
  if (filter.trial !== undefined) {
    where += ` AND ${filter.trial ? '' : 'NOT '}EXISTS (SELECT 1 FROM trials tr WHERE tr.user_id = u.id AND tr.converted_at IS NULL AND tr.ends_at > ?)`;
    params.push(filter.now);
  }
  return { where, params };
}

export function usersRepository(q: Queryable) {
  return {
    /** Throws UniqueViolation when the username key is taken in this app. */
    async insert(u: NewUser): Promise<void> {
      await q.run(
        `INSERT INTO users (id, app_id, username, username_key, password_hash, signup_license_id, is_lifetime, active_until, device_count, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, 0, NULL, 0, ?, ?)`,
        [u.id, u.appId, u.username, u.usernameKey, u.passwordHash, u.signupLicenseId, u.createdAt, u.createdAt],
      );
    },

    async findById(appId: string, id: string): Promise<UserRecord | undefined> {
      const r = await q.one(`SELECT ${COLUMNS} FROM ${FROM} WHERE u.id = ? AND u.app_id = ?`, [id, appId]);
      return one(q, r);
    },

    async findByUsernameKey(appId: string, key: string): Promise<UserRecord | undefined> {
      const r = await q.one(`SELECT ${COLUMNS} FROM ${FROM} WHERE u.app_id = ? AND u.username_key = ?`, [appId, key]);
      return one(q, r);
    },

    async existsByUsernameKey(appId: string, key: string): Promise<boolean> {
      return (await q.one('SELECT 1 AS x FROM users WHERE app_id = ? AND username_key = ?', [appId, key])) !== undefined;
    },

    async findBySignupLicense(appId: string, licenseId: string): Promise<UserRecord | undefined> {
      const r = await q.one(`SELECT ${COLUMNS} FROM ${FROM} WHERE u.signup_license_id = ? AND u.app_id = ?`, [licenseId, appId]);
      return one(q, r);
    },

    /** Takes the row's write lock (PostgreSQL) before a read-modify-write of the membership. */
    async lockRow(id: string, now: number): Promise<void> {
      await q.run('UPDATE users SET updated_at = ? WHERE id = ?', [now, id]);
    },

    async setMembership(id: string, isLifetime: boolean, activeUntil: number | null, now: number): Promise<void> {
      await q.run('UPDATE users SET is_lifetime = ?, active_until = ?, updated_at = ? WHERE id = ?', [
        isLifetime, activeUntil, now, id,
      ]);
    },

    async setPasswordHash(id: string, hash: string, now: number): Promise<void> {
      await q.run('UPDATE users SET password_hash = ?, updated_at = ? WHERE id = ?', [hash, now, id]);
    },

    /** Takes one device slot if one is free; the condition makes the limit race-proof. */
    async takeDeviceSlot(id: string, limit: number): Promise<boolean> {
      return (await q.run('UPDATE users SET device_count = device_count + 1 WHERE id = ? AND device_count < ?', [id, limit])) === 1;
    },

    async clearDeviceSlots(id: string): Promise<void> {
      await q.run('UPDATE users SET device_count = 0 WHERE id = ?', [id]);
    },

    async delete(appId: string, id: string): Promise<boolean> {
      return (await q.run('DELETE FROM users WHERE id = ? AND app_id = ?', [id, appId])) === 1;
    },

    /** `search` is a username key (validation.ts usernameKey): a substring of the key, or the whole user id. */
    async list(appId: string, search: string | null, cursor: Cursor | null, limit: number, filter: UserFilter = NO_FILTER): Promise<Page<UserRecord>> {
      const match = matching(appId, search, filter);
      const rows = await q.all(
        `SELECT ${COLUMNS} FROM ${FROM} WHERE ${match.where} AND u.created_at >= ? AND (u.created_at > ? OR (u.created_at = ? AND u.id > ?)) ORDER BY u.created_at, u.id LIMIT ?`,
        [...match.params, seekParam(cursor), ...cursorParams(cursor), limit + 1],
      );
      const page = toPage(rows, limit, toUser, (r) => ({ at: Number(r.created_at), id: r.id as string }));
      return { ...page, items: await complete(q, page.items) };
    },

    /** How many users the same search matches (the list's `total`). */
    async count(appId: string, search: string | null, filter: UserFilter = NO_FILTER): Promise<number> {
      const match = matching(appId, search, filter);
      const r = await q.one<{ n: number | string }>(`SELECT COUNT(*) AS n FROM users u WHERE ${match.where}`, match.params);
      return Number(r?.n ?? 0);
    },

    /** IP history: first seen, last seen and how often, per address. */
    async trackIp(userId: string, ip: string, now: number): Promise<void> {
      await q.run(
        `INSERT INTO user_ips (user_id, ip, first_seen_at, last_seen_at, seen_count) VALUES (?, ?, ?, ?, 1)
         ON CONFLICT (user_id, ip) DO UPDATE SET last_seen_at = excluded.last_seen_at, seen_count = user_ips.seen_count + 1`,
        [userId, ip, now, now],
      );
    },

    /** The `limit` addresses seen most recently. */
    async ips(userId: string, limit = 100): Promise<UserIpRecord[]> {
      const rows = await q.all(
        'SELECT ip, first_seen_at, last_seen_at, seen_count FROM user_ips WHERE user_id = ? ORDER BY last_seen_at DESC, ip LIMIT ?',
        [userId, limit],
      );
      return rows.map((r) => ({
        ip: r.ip as string,
        firstSeenAt: Number(r.first_seen_at),
        lastSeenAt: Number(r.last_seen_at),
        count: Number(r.seen_count),
      }));
    },
  };
}

export type UsersRepository = ReturnType<typeof usersRepository>;
