import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseTimestamp } from '../src/domain/validation.js';
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
];

const REFUSED = [
  '2030-01-01', '2030-01-01T00:00', '2030-01-01T00Z', '2030-01-01 00:00Z', '2030-01-01T00:00:00.Z', '2030-01-01T00:00:00.1234567890Z',
  '2030-02-30T00:00Z', '2029-02-29T00:00Z', '2030-13-01T00:00Z', '2030-00-01T00:00Z', '2030-01-00T00:00Z', '2030-01-01T24:00Z',
  '2030-01-01T00:60Z', '2030-01-01T00:00:60Z', '2030-01-01T00:00+24:00', '2030-01-01T00:00+02:60', '2030-01-01T00:00+0200',
  '1969-12-31T23:59:59Z', '1970-01-01T00:30+01:00', '10000-01-01T00:00Z', '+002030-01-01T00:00Z', 'March 5', '12', '', ' 2030-01-01T00:00Z',
  // Years 0-99: Date.UTC reads them as 1900-1999, so 0070 was stored as 1970.
  '0070-06-01T00:00:00Z', '0099-12-31T23:59Z', '0000-01-01T00:00Z', '1900-06-01T00:00Z',
];

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

  it.each(ACCEPTED)('bans expires_at %s is stored as %s', async (raw, instant) => {
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

  it.each(REFUSED)('%j is 422 in every field', async (raw) => {
    const id = await h.signUp(app, 'alice');
    expectError(await h.admin('POST', `/apps/${app.id}/licenses`, { count: 1, minutes: 60, expires_at: raw }), 422, 'validation_error');
    expectError(await h.admin('POST', `/apps/${app.id}/bans`, { type: 'hardware_id', value: 'hw', expires_at: raw }), 422, 'validation_error');
    expectError(await h.admin('PATCH', `/apps/${app.id}/users/${id}`, { active_until: raw }), 422, 'validation_error');
    expectError(await h.admin('GET', `/audit?since=${encodeURIComponent(raw)}`), 422, 'validation_error');
    expectError(await h.admin('GET', `/audit?until=${encodeURIComponent(raw)}`), 422, 'validation_error');
  });
});
