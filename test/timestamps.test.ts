import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseTimestamp } from '../src/domain/validation.js';
import type { LightMyRequestResponse } from 'fastify';
import { expectError, harness, type Harness, type TestApp } from './helpers.js';

/**
 * DECISIONS: every time the admin API takes is strict ISO 8601 with a zone
 * (`Z` or an offset), seconds and fraction optional, between 1970 and 9999.
 */

/** Accepted forms and the instant each means. */
const ACCEPTED: [string, string][] = [
  ['2030-01-01T00:00Z', '2030-01-01T00:00:00.000Z'],
  ['2030-01-01T00:00+02:00', '2029-12-31T22:00:00.000Z'],
  ['2030-01-01T00:00-05:30', '2030-01-01T05:30:00.000Z'],
  ['2030-01-01T00:00:00Z', '2030-01-01T00:00:00.000Z'],
  ['2030-01-01T00:00:00.5Z', '2030-01-01T00:00:00.500Z'],
  ['2030-01-01T00:00:00.123456789+01:00', '2029-12-31T23:00:00.123Z'],
  ['2030-01-01T00:00:00-00:00', '2030-01-01T00:00:00.000Z'],
  ['2028-02-29T12:00Z', '2028-02-29T12:00:00.000Z'],
  ['1970-01-01T00:00Z', '1970-01-01T00:00:00.000Z'],
  ['9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z'],
  ['1969-12-31T23:30-01:00', '1970-01-01T00:30:00.000Z'],
  // The offset without its colon, as `date +%z` prints it (issue 30: refused before, while operators typed it).
  ['2030-01-01T10:00:00+0200', '2030-01-01T08:00:00.000Z'],
  ['2030-01-01T00:00-0530', '2030-01-01T05:30:00.000Z'],
];

const REFUSED = [
  '2030-01-01', '2030-01-01T00:00', '2030-01-01T00Z', '2030-01-01 00:00Z', '2030-01-01T00:00:00.Z', '2030-01-01T00:00:00.1234567890Z',
  '2030-02-30T00:00Z', '2029-02-29T00:00Z', '2030-13-01T00:00Z', '2030-00-01T00:00Z', '2030-01-00T00:00Z', '2030-01-01T24:00Z',
  '2030-01-01T00:60Z', '2030-01-01T00:00:60Z', '2030-01-01T00:00+24:00', '2030-01-01T00:00+02:60', '2030-01-01T00:00+2400', '2030-01-01T00:00+020', '2030-01-01T00:00+02',
  '1969-12-31T23:59:59Z', '1970-01-01T00:30+01:00', '10000-01-01T00:00Z', '+002030-01-01T00:00Z', 'March 5', '12', '', ' 2030-01-01T00:00Z',
  // Years 0-99: Date.UTC reads them as 1900-1999, so 0070 was stored as 1970.
  '0070-06-01T00:00:00Z', '0099-12-31T23:59Z', '0000-01-01T00:00Z', '1900-06-01T00:00Z',
];

/** The accepted forms whose instant is after the harness clock (2026-01-01T00:00Z). */
const FUTURE = ACCEPTED.filter(([, instant]) => Date.parse(instant) > Date.parse('2026-01-01T00:00Z'));

describe('parseTimestamp', () => {
  it.each(ACCEPTED)('%s is %s', (raw, instant) => {
    expect(parseTimestamp(raw)).toBe(Date.parse(instant));
  });

  it.each(REFUSED)('%j is refused', (raw) => {
    expect(parseTimestamp(raw)).toBeNull();
  });
});

describe('every time the admin API takes', () => {
  let h: Harness;
  let app: TestApp;
  beforeEach(async () => {
    h = await harness();
    app = await h.createApp();
  });
  afterEach(async () => h.close());

  it.each(ACCEPTED)('licenses expires_at %s is stored as %s', async (raw, instant) => {
    const res = await h.admin('POST', `/apps/${app.id}/licenses`, { count: 1, minutes: 60, expires_at: raw });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().licenses[0].expires_at).toBe(instant);
  });

  // A ban that has already ended is refused (issue 30.5, test/lenient-writes.test.ts): the forms are tried on future times.
  it.each(FUTURE)('bans expires_at %s is stored as %s', async (raw, instant) => {
    const res = await h.admin('POST', `/apps/${app.id}/bans`, { type: 'hardware_id', value: 'hw', expires_at: raw });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().expires_at).toBe(instant);
  });

  it.each(ACCEPTED)('user active_until %s is stored as %s', async (raw, instant) => {
    const id = await h.signUp(app, 'alice');
    const res = await h.admin('PATCH', `/apps/${app.id}/users/${id}`, { active_until: raw });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().membership.active_until).toBe(instant);
  });

  it('audit since and until take the same forms (an offset is the same instant)', async () => {
    // The harness clock stands at 2026-01-01T00:00:00Z: the app's creation is logged then.
    const audit = async (query: string) => {
      const res = await h.admin('GET', `/audit?${query}`);
      expect(res.statusCode, res.body).toBe(200);
      return res.json().items.length as number;
    };
    const all = await audit('');
    expect(all).toBeGreaterThan(0);
    expect(await audit(`since=${encodeURIComponent('2026-01-01T00:00Z')}`)).toBe(all);
    expect(await audit(`since=${encodeURIComponent('2026-01-01T01:00:00.001+01:00')}`)).toBe(0);
    expect(await audit(`until=${encodeURIComponent('2026-01-01T01:00+01:00')}`)).toBe(0);
    expect(await audit(`until=${encodeURIComponent('2026-01-01T00:00:00.001Z')}`)).toBe(all);
  });

  /**
   * Every admin time field and query (issue 30: one parser for all of them). `send(raw)` makes the request with
   * the time in that field; `field` is what a 422 names. A new time field belongs in this table.
   */
  const FIELDS: { field: string; send: (raw: string) => Promise<LightMyRequestResponse> | null }[] = [
    { field: 'body.expires_at', send: (raw) => h.admin('POST', `/apps/${app.id}/licenses`, { count: 1, minutes: 60, expires_at: raw }) },
    // A ban's end must be in the future (issue 30.5): a valid past time is not tried there (null).
    { field: 'body.expires_at', send: (raw) => (past(raw) ? null : h.admin('POST', `/apps/${app.id}/bans`, { type: 'hardware_id', value: `hw-${++n}`, expires_at: raw })) },
    { field: 'body.active_until', send: async (raw) => h.admin('PATCH', `/apps/${app.id}/users/${await h.signUp(app, `user${++n}`)}`, { active_until: raw }) },
    { field: 'body.created_from', send: (raw) => h.admin('POST', `/apps/${app.id}/licenses/delete_unused`, { created_from: raw }) },
    { field: 'body.created_to', send: (raw) => h.admin('POST', `/apps/${app.id}/licenses/delete_unused`, { created_to: raw }) },
    ...['since', 'until', 'from', 'to'].map((q) => ({ field: `querystring.${q}`, send: (raw: string) => h.admin('GET', `/audit?${q}=${encodeURIComponent(raw)}`) })),
    ...['created_from', 'created_to'].map((q) => ({ field: `querystring.${q}`, send: (raw: string) => h.admin('GET', `/apps/${app.id}/licenses?${q}=${encodeURIComponent(raw)}`) })),
    // The stats window must stay within its bucket count: the other end is a day away from the time under test,
    // on its own side (a fixed valid time when the time under test is not one). At the ends of 1970-9999 there is
    // no such other end: the stats window is not tried there (null), every other field is.
    { field: 'querystring.from', send: (raw) => stats(raw, 'from', 'to', +1) },
    { field: 'querystring.to', send: (raw) => stats(raw, 'to', 'from', -1) },
  ];
  let n = 0;
  const past = (raw: string) => { const at = parseTimestamp(raw); return at !== null && at <= h.clock.ms; };
  const stats = (raw: string, tried: string, otherName: string, side: 1 | -1) => {
    const at = parseTimestamp(raw);
    const other = at === null ? Date.parse('2030-01-01T00:00Z') : at + 86_400_000 * side;
    if (other < 0 || parseTimestamp(new Date(other).toISOString()) === null) return null;
    return h.admin('GET', `/apps/${app.id}/stats?bucket=day&${tried}=${encodeURIComponent(raw)}&${otherName}=${new Date(other).toISOString()}`);
  };

  it.each(ACCEPTED)('%s is taken by every field', async (raw) => {
    for (const { field, send } of FIELDS) {
      const res = await send(raw);
      if (res === null) continue;
      expect(res.statusCode, `${field}: ${res.body}`).toBeLessThan(300);
    }
  });

  it.each(REFUSED)('%j is 422 in every field, which the answer names', async (raw) => {
    for (const { field, send } of FIELDS) {
      const err = expectError((await send(raw))!, 422, 'validation_error');
      expect(err.errors?.[0]?.field, `${field}: ${JSON.stringify(err)}`).toBe(field);
      expect(err.detail).toContain('ISO 8601');
    }
  });

  it('an offset typed unencoded in a query (its + arrives as a space) means the same instant; in a body a space is refused', async () => {
    for (const q of ['from=2026-01-01T01:00+01:00&to=2026-01-01T02:00+0100', 'from=2026-01-01T00:00Z&to=2026-01-01T01:00Z']) {
      const res = await h.admin('GET', `/apps/${app.id}/stats?bucket=hour&${q}`);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().from).toBe('2026-01-01T00:00:00.000Z');
    }
    const audit = await h.admin('GET', '/audit?since=2026-01-01T01:00:00.001+01:00');
    expect(audit.statusCode, audit.body).toBe(200);
    expect(audit.json().items).toEqual([]);
    expectError(await h.admin('POST', `/apps/${app.id}/bans`, { type: 'hardware_id', value: 'hw', expires_at: '2030-01-01T10:00 02:00' }), 422, 'validation_error');
  });
});
