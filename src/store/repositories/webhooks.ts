import type { Dialect, Queryable, Row } from '../db.js';
import type { Page } from '../records.js';
import { nullableNumber } from '../rows.js';
import { toEvent, type EventRecord } from './events.js';
import { escapeLike } from './licenses.js';
import { AFTER_CURSOR, cursorParams, toPage, type Cursor } from '../pagination.js';

export type EndpointKind = 'standard' | 'discord';

export interface EndpointRecord {
  id: string;
  /** null: a service-wide endpoint (every app's events and the service's own). */
  appId: string | null;
  url: string;
  kind: EndpointKind;
  /** null: every event type. */
  eventTypes: string[] | null;
  description: string;
  enabled: boolean;
  /** Why the service disabled it (410, failing for 24 h); null when enabled or disabled by an operator. */
  disabledReason: string | null;
  secret: string;
  /** The secret before the last rotation, which keeps signing beside the new one until `previousSecretUntil`. */
  previousSecret: string | null;
  previousSecretUntil: number | null;
  /** Since when every delivery to it failed; null once one succeeds. */
  failingSince: number | null;
  createdAt: number;
  updatedAt: number;
}

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

export interface DeliveryRecord {
  id: string;
  eventId: string;
  endpointId: string;
  status: DeliveryStatus;
  /** Attempts in the current schedule (a replay starts a new one). */
  attempts: number;
  nextAt: number | null;
  claimedUntil: number | null;
  lastStatus: number | null;
  createdAt: number;
  updatedAt: number;
}

export interface AttemptRecord {
  id: string;
  deliveryId: string;
  at: number;
  /** The HTTP status, null when no answer came (refused, timeout, SSRF). */
  status: number | null;
  error: string | null;
  /** The first 2 KiB of the answer. */
  body: string | null;
  durationMs: number;
}

const ENDPOINT_COLUMNS =
  'id, app_id, url, kind, event_types, description, enabled, disabled_reason, secret, previous_secret, previous_secret_until, failing_since, created_at, updated_at';
const ENDPOINT_COLUMN_LIST = ENDPOINT_COLUMNS.split(', ');
const DELIVERY_COLUMNS = 'id, event_id, endpoint_id, status, attempts, next_at, claimed_until, last_status, created_at, updated_at';

/** PostgreSQL: successes settled from a VALUES list `v` of (id, attempts, last_status, at), `n` rows (settleDelivered, recordDelivered). */
const BIG = 'CAST(? AS BIGINT)';
const deliveredValues = (n: number): string => `v (id, attempts, last_status, at) AS (VALUES ${Array.from({ length: n }, () => `(?, ${BIG}, ${BIG}, ${BIG})`).join(', ')})`;
const SETTLE_FROM_VALUES = `UPDATE webhook_deliveries SET status = 'delivered', attempts = v.attempts, next_at = NULL, last_status = v.last_status, claimed_until = NULL, updated_at = v.at
         FROM v WHERE webhook_deliveries.id = v.id`;
/** PostgreSQL: the failing ones of `n` endpoints made healthy, locked in id order (markHealthyAll, recordDelivered). */
const healFailing = (n: number): string =>
  `UPDATE webhook_endpoints SET failing_since = NULL WHERE id IN (SELECT id FROM webhook_endpoints WHERE id IN (${Array.from({ length: n }, () => '?').join(', ')}) AND failing_since IS NOT NULL ORDER BY id FOR UPDATE)`;

/** The due deliveries' ids, oldest first (parameters: now, now, limit); the claim appends its lock. */
const DUE_IDS = `SELECT id FROM webhook_deliveries WHERE status = 'pending' AND next_at <= ? AND (claimed_until IS NULL OR claimed_until <= ?)
             ORDER BY next_at LIMIT ?`;

/** The enabled endpoints an event of this type in this app (null: the service) goes to, as a WHERE clause. */
function subscriberFilter(appId: string | null, type: string): { where: string; params: string[] } {
  return {
    where: `WHERE enabled = 1 AND (app_id IS NULL${appId === null ? '' : ' OR app_id = ?'}) AND (event_types IS NULL OR event_types LIKE ? ESCAPE '\\')`,
    params: [...(appId === null ? [] : [appId]), `%,${escapeLike(type)},%`],
  };
}

/** Event types are stored as `,a,b,`, so one LIKE finds a subscriber in either store. */
const typesColumn = (types: string[] | null): string | null => (types === null ? null : `,${types.join(',')},`);

function toEndpoint(r: Row): EndpointRecord {
  const types = (r.event_types as string | null) ?? null;
  return {
    id: r.id as string, appId: (r.app_id as string | null) ?? null, url: r.url as string, kind: r.kind as EndpointKind,
    eventTypes: types === null ? null : types.split(',').filter(Boolean), description: r.description as string,
    enabled: Number(r.enabled) === 1, disabledReason: (r.disabled_reason as string | null) ?? null, secret: r.secret as string,
    previousSecret: (r.previous_secret as string | null) ?? null, previousSecretUntil: nullableNumber(r.previous_secret_until),
    failingSince: nullableNumber(r.failing_since), createdAt: Number(r.created_at), updatedAt: Number(r.updated_at),
  };
}

function toDelivery(r: Row): DeliveryRecord {
  return {
    id: r.id as string, eventId: r.event_id as string, endpointId: r.endpoint_id as string, status: r.status as DeliveryStatus,
    attempts: Number(r.attempts), nextAt: nullableNumber(r.next_at), claimedUntil: nullableNumber(r.claimed_until),
    lastStatus: nullableNumber(r.last_status), createdAt: Number(r.created_at), updatedAt: Number(r.updated_at),
  };
}

const toAttempt = (r: Row): AttemptRecord => ({
  id: r.id as string, deliveryId: r.delivery_id as string, at: Number(r.at), status: nullableNumber(r.status),
  error: (r.error as string | null) ?? null, body: (r.body as string | null) ?? null, durationMs: Number(r.duration_ms),
});

export interface EndpointChange {
  url?: string;
  eventTypes?: string[] | null;
  description?: string;
  enabled?: boolean;
}

/** A claimed delivery with what sending it needs. */
export interface Claimed {
  delivery: DeliveryRecord;
  event: EventRecord;
  endpoint: EndpointRecord;
}

export function webhooksRepository(q: Queryable, dialect: Dialect) {
  return {
    async insertEndpoint(e: EndpointRecord): Promise<void> {
      await q.run(
        `INSERT INTO webhook_endpoints (${ENDPOINT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        [e.id, e.appId, e.url, e.kind, typesColumn(e.eventTypes), e.description, e.enabled ? 1 : 0, e.disabledReason, e.secret, e.previousSecret,
          e.previousSecretUntil, e.failingSince, e.createdAt, e.updatedAt],
      );
    },

    async findEndpoint(id: string): Promise<EndpointRecord | undefined> {
      const r = await q.one(`SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = ?`, [id]);
      return r && toEndpoint(r);
    },

    /** One scope's endpoints (an app's, or the service-wide ones for null), oldest first. */
    async listEndpoints(appId: string | null, cursor: Cursor | null, limit: number): Promise<Page<EndpointRecord>> {
      const rows = await q.all(
        `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE ${appId === null ? 'app_id IS NULL' : 'app_id = ?'} AND ${AFTER_CURSOR} ORDER BY created_at, id LIMIT ?`,
        [...(appId === null ? [] : [appId]), ...cursorParams(cursor), limit + 1],
      );
      return toPage(rows, limit, toEndpoint, (r) => ({ at: Number(r.created_at), id: r.id as string }));
    },

    async updateEndpoint(id: string, c: EndpointChange, now: number): Promise<boolean> {
      const sets: string[] = ['updated_at = ?'];
      const params: (string | number | null)[] = [now];
      if (c.url !== undefined) sets.push('url = ?'), params.push(c.url);
      if (c.eventTypes !== undefined) sets.push('event_types = ?'), params.push(typesColumn(c.eventTypes));
      if (c.description !== undefined) sets.push('description = ?'), params.push(c.description);
      if (c.enabled !== undefined) {
        sets.push('enabled = ?', 'disabled_reason = NULL'), params.push(c.enabled ? 1 : 0);
        // Enabled again by an operator: its failures so far no longer count towards the 24 h rule.
        if (c.enabled) sets.push('failing_since = NULL');
      }
      return (await q.run(`UPDATE webhook_endpoints SET ${sets.join(', ')} WHERE id = ?`, [...params, id])) === 1;
    },

    async rotateSecret(id: string, secret: string, previous: string, previousUntil: number, now: number): Promise<boolean> {
      return (await q.run(
        'UPDATE webhook_endpoints SET secret = ?, previous_secret = ?, previous_secret_until = ?, updated_at = ? WHERE id = ?',
        [secret, previous, previousUntil, now, id],
      )) === 1;
    },

    /** PostgreSQL: holds the endpoint's row until the transaction ends (SQLite has one writer at a time anyway). */
    async lockEndpoint(id: string): Promise<void> {
      if (dialect === 'postgres') await q.one('SELECT id FROM webhook_endpoints WHERE id = ? FOR UPDATE', [id]);
    },

    async deleteEndpoint(id: string): Promise<boolean> {
      return (await q.run('DELETE FROM webhook_endpoints WHERE id = ?', [id])) === 1;
    },

    /** Disabled by the service (410, failing for 24 h): only an enabled one, so the reason is recorded once. */
    async disableEndpoint(id: string, reason: string, now: number): Promise<boolean> {
      return (await q.run('UPDATE webhook_endpoints SET enabled = 0, disabled_reason = ?, updated_at = ? WHERE id = ? AND enabled = 1', [reason, now, id])) === 1;
    },

    /** The first failure of a streak starts it; an earlier start is kept. */
    async markFailing(id: string, now: number): Promise<number> {
      await q.run('UPDATE webhook_endpoints SET failing_since = ? WHERE id = ? AND failing_since IS NULL', [now, id]);
      const r = await q.one<{ failing_since: number | string | null }>('SELECT failing_since FROM webhook_endpoints WHERE id = ?', [id]);
      return nullableNumber(r?.failing_since) ?? now;
    },

    async markHealthy(id: string): Promise<void> {
      await q.run('UPDATE webhook_endpoints SET failing_since = NULL WHERE id = ? AND failing_since IS NOT NULL', [id]);
    },

    /**
     * Fans an event out: a pending delivery, due at once, for each enabled endpoint subscribed to it
     * (`subscriberFilter`); resolves to how many. `newId` makes UUIDv7s. PostgreSQL: one INSERT … SELECT,
     * whatever the number of endpoints (a round trip each would make a write with subscribers cost more than one
     * without); the ids are the time and counter of one UUIDv7 (its first 19 characters) and a random tail of 62
     * bits the database draws per row. SQLite, in process, has no round trips to save, and there the INSERT …
     * SELECT measured twice the cost of the read and one INSERT per endpoint (the bench's two: 120 against 50 µs).
     */
    async fanOut(eventId: string, appId: string | null, type: string, now: number, newId: () => string): Promise<number> {
      const { where, params } = subscriberFilter(appId, type);
      if (dialect === 'postgres') {
        return q.run(
          `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, status, attempts, next_at, created_at, updated_at)
           SELECT ? || substr(gen_random_uuid()::text, 20), ?, id, 'pending', 0, CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT)
           FROM webhook_endpoints ${where}`,
          [newId().slice(0, 19), eventId, now, now, now, ...params],
        );
      }
      const endpoints = await q.all<{ id: string }>(`SELECT id FROM webhook_endpoints ${where}`, params);
      for (const { id } of endpoints) {
        await q.run('INSERT INTO webhook_deliveries (id, event_id, endpoint_id, status, attempts, next_at, created_at, updated_at) VALUES (?, ?, ?, \'pending\', 0, ?, ?, ?)', [
          newId(), eventId, id, now, now, now,
        ]);
      }
      return endpoints.length;
    },

    async insertDelivery(d: DeliveryRecord): Promise<void> {
      await q.run(
        `INSERT INTO webhook_deliveries (${DELIVERY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        [d.id, d.eventId, d.endpointId, d.status, d.attempts, d.nextAt, d.claimedUntil, d.lastStatus, d.createdAt, d.updatedAt],
      );
    },

    /**
     * Claims up to `limit` due deliveries until `until`, each with its event and endpoint: each worker gets its
     * own (SKIP LOCKED on PostgreSQL, where every node runs one; SQLite has a single writer), and a claim that
     * outlives its node expires, so the delivery is due again. The event and endpoint are read in the same
     * statement on PostgreSQL (one round trip for the whole batch) and in the same transaction on SQLite.
     */
    async claimDueWith(now: number, until: number, limit: number): Promise<Claimed[]> {
      const joined = `SELECT ${DELIVERY_COLUMNS.split(', ').map((c) => `d.${c}`).join(', ')},
          e.type AS e_type, e.occurred_at AS e_occurred_at, e.app_id AS e_app_id, e.data AS e_data,
          ${ENDPOINT_COLUMN_LIST.map((c) => `p.${c} AS p_${c}`).join(', ')}`;
      const from = 'JOIN events e ON e.id = d.event_id JOIN webhook_endpoints p ON p.id = d.endpoint_id';
      let rows: Row[];
      if (dialect === 'postgres') {
        rows = await q.all(
          `WITH d AS (UPDATE webhook_deliveries SET claimed_until = ? WHERE id IN (${DUE_IDS} FOR UPDATE SKIP LOCKED) RETURNING ${DELIVERY_COLUMNS})
           ${joined} FROM d ${from} ORDER BY d.next_at`,
          [until, now, now, limit],
        );
      } else {
        const ids = (await q.all<{ id: string }>(
          `UPDATE webhook_deliveries SET claimed_until = ? WHERE id IN (${DUE_IDS}) RETURNING id`,
          [until, now, now, limit],
        )).map((r) => r.id);
        if (ids.length === 0) return [];
        rows = await q.all(`${joined} FROM webhook_deliveries d ${from} WHERE d.id IN (${ids.map(() => '?').join(', ')}) ORDER BY d.next_at`, ids);
      }
      return rows.map((r) => ({
        delivery: toDelivery(r),
        event: toEvent({ id: r.event_id, type: r.e_type, occurred_at: r.e_occurred_at, app_id: r.e_app_id, data: r.e_data }),
        endpoint: toEndpoint(Object.fromEntries(ENDPOINT_COLUMN_LIST.map((c) => [c, r[`p_${c}`]]))),
      }));
    },

    /** Whether any delivery is due now (a cheap read before a claim). */
    async anyDue(now: number): Promise<boolean> {
      return (await q.one(
        "SELECT 1 AS x FROM webhook_deliveries WHERE status = 'pending' AND next_at <= ? AND (claimed_until IS NULL OR claimed_until <= ?) LIMIT 1",
        [now, now],
      )) !== undefined;
    },

    async findDelivery(id: string): Promise<DeliveryRecord | undefined> {
      const r = await q.one(`SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE id = ?`, [id]);
      return r && toDelivery(r);
    },

    /** Attempts in one statement (a group of outcomes written together). */
    async insertAttempts(list: AttemptRecord[]): Promise<void> {
      if (list.length === 0) return;
      await q.run(
        `INSERT INTO webhook_attempts (id, delivery_id, at, status, error, body, duration_ms) VALUES ${list.map(() => '(?, ?, ?, ?, ?, ?, ?)').join(', ')}`,
        list.flatMap((a) => [a.id, a.deliveryId, a.at, a.status, a.error, a.body, a.durationMs]),
      );
    },

    /** Deliveries that succeeded, settled in one statement (`settle(id, 'delivered', …)` for each). */
    async settleDelivered(list: { id: string; attempts: number; status: number; at: number }[]): Promise<void> {
      if (list.length === 0) return;
      if (dialect === 'sqlite') {
        // In process: a statement each costs no round trip, and the simplest plan.
        for (const d of list) {
          await q.run("UPDATE webhook_deliveries SET status = 'delivered', attempts = ?, next_at = NULL, last_status = ?, claimed_until = NULL, updated_at = ? WHERE id = ?", [d.attempts, d.status, d.at, d.id]);
        }
        return;
      }
      await q.run(`WITH ${deliveredValues(list.length)} ${SETTLE_FROM_VALUES}`, list.flatMap((d) => [d.id, d.attempts, d.status, d.at]));
    },

    /**
     * A group of successful attempts recorded: the attempts inserted, the deliveries settled `delivered`, and the
     * endpoints that were failing made healthy (`insertAttempts`, `settleDelivered`, `markHealthyAll`). On
     * PostgreSQL one statement (data-modifying CTEs), atomic by itself, so the worker sends it without BEGIN and
     * COMMIT: one round trip where there were five. The failing endpoints are locked in id order, as in
     * `markHealthyAll`. SQLite runs the three in turn (in its caller's transaction).
     */
    async recordDelivered(attempts: AttemptRecord[], delivered: { id: string; attempts: number; status: number; at: number }[], endpointIds: string[]): Promise<void> {
      // A group of successes has a delivery, its attempt and its endpoint for each: all three lists or none.
      if (delivered.length === 0) return;
      if (dialect === 'sqlite') {
        await this.insertAttempts(attempts);
        await this.settleDelivered(delivered);
        await this.markHealthyAll(endpointIds);
        return;
      }
      await q.run(
        `WITH a AS (INSERT INTO webhook_attempts (id, delivery_id, at, status, error, body, duration_ms) VALUES ${attempts.map(() => '(?, ?, ?, ?, ?, ?, ?)').join(', ')}),
         ${deliveredValues(delivered.length)},
         s AS (${SETTLE_FROM_VALUES})
         ${healFailing(endpointIds.length)}`,
        [
          ...attempts.flatMap((a) => [a.id, a.deliveryId, a.at, a.status, a.error, a.body, a.durationMs]),
          ...delivered.flatMap((d) => [d.id, d.attempts, d.status, d.at]),
          ...endpointIds,
        ],
      );
    },

    /**
     * `markHealthy` for several endpoints in one statement. On PostgreSQL the failing ones are locked in id order
     * (the order the worker's per-endpoint outcomes take them in), so two nodes' groups cannot deadlock on them;
     * a healthy endpoint is not locked at all.
     */
    async markHealthyAll(ids: string[]): Promise<void> {
      if (ids.length === 0) return;
      const list = ids.map(() => '?').join(', ');
      await q.run(
        dialect === 'postgres' ? healFailing(ids.length) : `UPDATE webhook_endpoints SET failing_since = NULL WHERE id IN (${list}) AND failing_since IS NOT NULL`,
        ids,
      );
    },

    /** The outcome of an attempt: the next one due at `nextAt`, or the delivery settled. Releases the claim. */
    async settle(id: string, status: DeliveryStatus, attempts: number, nextAt: number | null, lastStatus: number | null, now: number): Promise<void> {
      await q.run(
        'UPDATE webhook_deliveries SET status = ?, attempts = ?, next_at = ?, last_status = ?, claimed_until = NULL, updated_at = ? WHERE id = ?',
        [status, attempts, nextAt, lastStatus, now, id],
      );
    },

    /** The pending deliveries of an endpoint the service disabled: they fail now rather than wait for it. */
    async failPendingOf(endpointId: string, now: number): Promise<number> {
      return q.run("UPDATE webhook_deliveries SET status = 'failed', next_at = NULL, claimed_until = NULL, updated_at = ? WHERE endpoint_id = ? AND status = 'pending'", [now, endpointId]);
    },

    /** Sends a delivery again from the start of the schedule. */
    async replay(id: string, now: number): Promise<boolean> {
      return (await q.run(
        "UPDATE webhook_deliveries SET status = 'pending', attempts = 0, next_at = ?, claimed_until = NULL, updated_at = ? WHERE id = ? AND status <> 'pending'",
        [now, now, id],
      )) === 1;
    },

    async replayFailedSince(endpointId: string, since: number, now: number): Promise<number> {
      return q.run(
        "UPDATE webhook_deliveries SET status = 'pending', attempts = 0, next_at = ?, claimed_until = NULL, updated_at = ? WHERE endpoint_id = ? AND status = 'failed' AND created_at >= ?",
        [now, now, endpointId, since],
      );
    },

    /** Newest first. */
    async listDeliveries(endpointId: string, status: DeliveryStatus | undefined, cursor: Cursor | null, limit: number): Promise<Page<DeliveryRecord & { eventType: string }>> {
      const where = ['endpoint_id = ?'];
      const params: (string | number)[] = [endpointId];
      if (status) where.push('status = ?'), params.push(status);
      if (cursor) where.push('(created_at < ? OR (created_at = ? AND id < ?))'), params.push(cursor.at, cursor.at, cursor.id);
      const rows = await q.all(
        `SELECT ${DELIVERY_COLUMNS}, (SELECT type FROM events e WHERE e.id = webhook_deliveries.event_id) AS event_type
         FROM webhook_deliveries WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT ?`,
        [...params, limit + 1],
      );
      return toPage(rows, limit, (r) => ({ ...toDelivery(r), eventType: r.event_type as string }), (r) => ({ at: Number(r.created_at), id: r.id as string }));
    },

    async attemptsOf(deliveryIds: string[]): Promise<AttemptRecord[]> {
      if (deliveryIds.length === 0) return [];
      const rows = await q.all(
        `SELECT id, delivery_id, at, status, error, body, duration_ms FROM webhook_attempts WHERE delivery_id IN (${deliveryIds.map(() => '?').join(', ')}) ORDER BY at, id`,
        deliveryIds,
      );
      return rows.map(toAttempt);
    },

    /** Queue depth and the due time of the oldest pending delivery (metrics). */
    async queue(): Promise<{ pending: number; oldestCreatedAt: number | null }> {
      const r = await q.one<{ n: number | string; oldest: number | string | null }>(
        "SELECT COUNT(*) AS n, MIN(created_at) AS oldest FROM webhook_deliveries WHERE status = 'pending'",
      );
      return { pending: Number(r?.n ?? 0), oldestCreatedAt: nullableNumber(r?.oldest) };
    },

    async findKey(scope: string): Promise<{ privateKey: string; publicKey: string } | undefined> {
      const r = await q.one<{ private_key: string; public_key: string }>('SELECT private_key, public_key FROM webhook_keys WHERE scope = ?', [scope]);
      return r && { privateKey: r.private_key, publicKey: r.public_key };
    },

    /** The first key made for a scope wins; a node that raced it reads the winner's. */
    async insertKey(scope: string, privateKey: string, publicKey: string, now: number): Promise<void> {
      await q.run('INSERT INTO webhook_keys (scope, private_key, public_key, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING', [scope, privateKey, publicKey, now]);
    },
  };
}

export type WebhooksRepository = ReturnType<typeof webhooksRepository>;
