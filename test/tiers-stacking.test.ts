import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { effectiveLimits } from '../src/domain/entitlements.js';
import { endHolding, renewRedemption, shortenHolding } from '../src/domain/licenses.js';
import { write } from '../src/domain/unit-of-work.js';
import { expectError, harness, noticesHeard, PASSWORD, type Harness, type TestApp } from './helpers.js';

/**
 * docs/decisions.md "Each entitlement stacks on itself" (the tier escalation of /work/notes/attack/tier.mjs):
 * redeemed minutes extend each entitlement code, and each template's limits, from that code's (those limits')
 * own live end, never to the membership's stacked end. A day of "pro" on a year of "basic" is a day of "pro".
 */
let h: Harness;
let app: TestApp;
beforeEach(async () => {
  h = await harness();
  app = await h.createApp({ device_auth_enabled: true, max_devices_per_user: 1 });
});
afterEach(async () => h.close());

const DAY = 24 * 60 * 60_000;

async function template(body: Record<string, unknown>): Promise<string> {
  const res = await h.admin('POST', `/apps/${app.id}/templates`, body);
  expect(res.statusCode, res.body).toBe(201);
  return res.json().id;
}

async function codes(templateId: string, count = 1): Promise<string[]> {
  const res = await h.admin('POST', `/apps/${app.id}/licenses`, { count, template_id: templateId });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().licenses.map((l: { code: string }) => l.code);
}

async function redeem(username: string, code: string) {
  return h.client(app, 'POST', '/activate_license', { code, username, password: PASSWORD, hardware_id: 'hw-1' });
}

const contextOf = async (username: string, hw = 'hw-1') =>
  h.client(app, 'GET', '/app_context', undefined, { 'x-api-username': username, 'x-api-password': PASSWORD, 'x-hardware-id': hw });

async function entitlementsOf(username: string): Promise<string[]> {
  await noticesHeard(h);
  const res = await contextOf(username);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().user.membership.entitlements;
}

/** The ends (ISO, null: never) of the user's grants of `code`, as the admin view shows them. */
async function grantEnds(userId: string, code: string): Promise<(string | null)[]> {
  const detail = (await h.admin('GET', `/apps/${app.id}/users/${userId}`)).json();
  const ends: (string | null)[] = detail.entitlement_grants.filter((g: { code: string }) => g.code === code).map((g: { until: string | null }) => g.until);
  // Grants made at one instant have no order among them: nulls first, then by end.
  return ends.sort((a, b) => (a === b ? 0 : a === null ? -1 : b === null ? 1 : a < b ? -1 : 1));
}

const activeUntil = async (userId: string): Promise<string | null> => (await h.admin('GET', `/apps/${app.id}/users/${userId}`)).json().membership.active_until;

async function limitsAt(userId: string, at: number) {
  const s = h.tollgate.services;
  const user = (await s.store.users.findById(app.id, userId))!;
  return effectiveLimits((await s.store.apps.findById(app.id))!, user, at);
}

describe('each entitlement code and each template limits stack on themselves', () => {
  it('a Basic year then a Pro day: pro and its 5 devices last one day, the membership a year and a day', async () => {
    const basic = await template({ name: 'Basic yearly', minutes: 525_600, entitlements: ['basic'], max_devices: 1 });
    const pro = await template({ name: 'Pro 1 day', minutes: 1440, entitlements: ['pro'], max_devices: 5, max_seats: 10 });
    const id = await h.signUp(app, 'eve', PASSWORD, 'hw-1');
    expect((await redeem('eve', (await codes(basic))[0]!)).statusCode).toBe(200);
    const act = await redeem('eve', (await codes(pro))[0]!);
    expect(act.statusCode, act.body).toBe(200);
    // The membership's own arithmetic is the seed's: the day stacks on the year.
    expect(await activeUntil(id)).toBe(h.clock.iso(366 * DAY));
    expect(await grantEnds(id, 'pro')).toEqual([h.clock.iso(DAY)]);
    expect(await grantEnds(id, 'basic')).toEqual([h.clock.iso(365 * DAY)]);
    expect(await entitlementsOf('eve')).toEqual(['basic', 'pro']);
    for (const hw of ['hw-2', 'hw-3', 'hw-4', 'hw-5']) expect((await contextOf('eve', hw)).statusCode).toBe(200);
    expectError(await contextOf('eve', 'hw-6'), 401, 'device_limit');
    expect(await limitsAt(id, h.clock.ms + DAY - 1)).toEqual({ maxDevices: 5, maxSeats: 10, heartbeatSeconds: null });

    h.clock.ms += DAY;
    expect(await entitlementsOf('eve')).toEqual(['basic']);
    expect(await limitsAt(id, h.clock.ms)).toEqual({ maxDevices: 1, maxSeats: null, heartbeatSeconds: null });
    expect((await h.admin('POST', `/apps/${app.id}/users/${id}/reset-devices`)).statusCode).toBe(204);
    await noticesHeard(h);
    expect((await contextOf('eve', 'hw-7')).statusCode).toBe(200);
    expectError(await contextOf('eve', 'hw-8'), 401, 'device_mismatch'); // one device: the seed's answer
  });

  it('a Pro day twice (on a Basic year): two days of pro, stacked on pro', async () => {
    const basic = await template({ name: 'Basic yearly', minutes: 525_600, entitlements: ['basic'], max_devices: 1 });
    const pro = await template({ name: 'Pro 1 day', minutes: 1440, entitlements: ['pro'], max_devices: 5 });
    const id = await h.signUp(app, 'eve', PASSWORD, 'hw-1');
    await redeem('eve', (await codes(basic))[0]!);
    const [a, b] = await codes(pro, 2);
    await redeem('eve', a!);
    h.clock.ms += DAY / 2;
    await redeem('eve', b!);
    expect(await grantEnds(id, 'pro')).toEqual([h.clock.iso(DAY / 2), h.clock.iso(DAY + DAY / 2)]);
    expect(await limitsAt(id, h.clock.ms + DAY + DAY / 2 - 1)).toMatchObject({ maxDevices: 5 });
    expect(await limitsAt(id, h.clock.ms + DAY + DAY / 2)).toMatchObject({ maxDevices: 1 });
    h.clock.ms += DAY + DAY / 2 - 1;
    expect(await entitlementsOf('eve')).toEqual(['basic', 'pro']);
    h.clock.ms += 1;
    expect(await entitlementsOf('eve')).toEqual(['basic']);
  });

  it('the docs example: pro for 60 min at t0, export for 60 min at t0+30: pro to t0+60, export to t0+90, membership to t0+120', async () => {
    const pro = await template({ name: 'pro', minutes: 60, entitlements: ['pro'] });
    const exp = await template({ name: 'export', minutes: 60, entitlements: ['export'] });
    const id = await h.signUp(app, 'alice', PASSWORD, 'hw-1');
    await redeem('alice', (await codes(pro))[0]!);
    h.clock.minutes(30);
    await redeem('alice', (await codes(exp))[0]!);
    expect(await activeUntil(id)).toBe(h.clock.iso(90 * 60_000));
    expect(await entitlementsOf('alice')).toEqual(['export', 'pro']);
    h.clock.minutes(30); // t0+60
    expect(await entitlementsOf('alice')).toEqual(['export']);
    h.clock.minutes(30); // t0+90
    expect(await entitlementsOf('alice')).toEqual([]);
    h.clock.minutes(29); // t0+119: the membership is still active
    expect(await entitlementsOf('alice')).toEqual([]);
    h.clock.minutes(1);
    expectError(await contextOf('alice'), 403, 'membership_inactive');
  });

  it('on a lifetime membership a code still stacks on itself; a never-ending code stays never-ending', async () => {
    const forever = await template({ name: 'forever', lifetime: true, entitlements: ['pro'] });
    const day = await template({ name: 'day', minutes: 1440, entitlements: ['pro', 'export'] });
    const id = await h.signUp(app, 'alice', PASSWORD, 'hw-1');
    await redeem('alice', (await codes(forever))[0]!);
    for (const c of await codes(day, 2)) await redeem('alice', c);
    expect(await grantEnds(id, 'export')).toEqual([h.clock.iso(DAY), h.clock.iso(2 * DAY)]);
    // pro never ends by its lifetime grant; the days count from now, so they outlast it when lifetime is revoked.
    expect(await grantEnds(id, 'pro')).toEqual([null, h.clock.iso(DAY), h.clock.iso(DAY)]);
    h.clock.ms += 3 * DAY;
    expect(await entitlementsOf('alice')).toEqual(['pro']);
  });

  it('a template applied to a redeemed Pro day: each code keeps its day, a new code takes the day, not the year', async () => {
    const basic = await template({ name: 'Basic yearly', minutes: 525_600, entitlements: ['basic'], max_devices: 1 });
    const pro = await template({ name: 'Pro 1 day', minutes: 1440, entitlements: ['pro'], max_devices: 5 });
    const id = await h.signUp(app, 'eve', PASSWORD, 'hw-1');
    await redeem('eve', (await codes(basic))[0]!);
    await redeem('eve', (await codes(pro))[0]!);
    h.clock.ms += DAY / 2;
    await h.admin('PATCH', `/apps/${app.id}/templates/${pro}`, { entitlements: ['pro', 'export'] });
    expect((await h.admin('POST', `/apps/${app.id}/templates/${pro}/apply`)).json()).toMatchObject({ used_licenses: 1 });
    expect(await grantEnds(id, 'pro')).toEqual([h.clock.iso(DAY / 2)]);
    expect(await grantEnds(id, 'export')).toEqual([h.clock.iso(DAY / 2)]);
    expect(await grantEnds(id, 'basic')).toEqual([h.clock.iso(365 * DAY - DAY / 2)]);
    expect(await entitlementsOf('eve')).toEqual(['basic', 'export', 'pro']);
    h.clock.ms += DAY / 2;
    expect(await entitlementsOf('eve')).toEqual(['basic']);
  });

  it('50 parallel redemptions of distinct Pro-day codes for one user (on a Basic year) stack to exactly 50 days: none is lost', async () => {
    const basic = await template({ name: 'Basic yearly', minutes: 525_600, entitlements: ['basic'], max_devices: 1 });
    const pro = await template({ name: 'Pro 1 day', minutes: 1440, entitlements: ['pro'], max_devices: 5 });
    const id = await h.signUp(app, 'eve', PASSWORD, 'hw-1');
    await redeem('eve', (await codes(basic))[0]!);
    const all = await codes(pro, 50);
    const answers = await Promise.all(all.map((c) => redeem('eve', c)));
    expect(answers.map((r) => r.statusCode)).toEqual(all.map(() => 200));
    const ends = (await grantEnds(id, 'pro')).map((e) => Date.parse(e!)).sort((x, y) => x - y);
    expect(ends).toEqual(Array.from({ length: 50 }, (_, i) => h.clock.ms + (i + 1) * DAY));
    expect(await limitsAt(id, h.clock.ms + 50 * DAY - 1)).toMatchObject({ maxDevices: 5 });
    expect(await limitsAt(id, h.clock.ms + 50 * DAY)).toMatchObject({ maxDevices: 1 });
    expect(await activeUntil(id)).toBe(h.clock.iso(365 * DAY + 50 * DAY));
  });
});

describe("a store's renewal of a redeemed license (renewRedemption, which src/domain/sales/apply.ts's renewal calls)", () => {
  async function renew(code: string, userId: string, minutes: number): Promise<void> {
    const s = h.tollgate.services;
    const license = (await s.store.licenses.findByCode(app.id, code))!;
    // As the store's renewal does, in a unit of work that drops the user's caches (with its membership change).
    await write(s, async ({ tx, changed }) => {
      await renewRedemption(tx, license, userId, minutes, h.clock.ms);
      changed({ user: userId });
    });
    await noticesHeard(h);
  }

  it('a Pro day renewed on a Basic year stacks a day on pro and on its limits, not up to the membership end', async () => {
    const basic = await template({ name: 'Basic yearly', minutes: 525_600, entitlements: ['basic'], max_devices: 1 });
    const pro = await template({ name: 'Pro 1 day', minutes: 1440, entitlements: ['pro'], max_devices: 5 });
    const id = await h.signUp(app, 'eve', PASSWORD, 'hw-1');
    await redeem('eve', (await codes(basic))[0]!);
    const code = (await codes(pro))[0]!;
    await redeem('eve', code);
    h.clock.ms += DAY / 2;
    await renew(code, id, 1440);
    // The license's own grant moves (one row, not one per period).
    expect(await grantEnds(id, 'pro')).toEqual([h.clock.iso(DAY + DAY / 2)]);
    expect(await limitsAt(id, h.clock.ms + DAY + DAY / 2 - 1)).toMatchObject({ maxDevices: 5 });
    expect(await limitsAt(id, h.clock.ms + DAY + DAY / 2)).toMatchObject({ maxDevices: 1 });
    // A renewal that comes after the day ran out lends a day from now.
    h.clock.ms += 2 * DAY;
    expect(await entitlementsOf('eve')).toEqual(['basic']);
    await renew(code, id, 1440);
    expect(await entitlementsOf('eve')).toEqual(['basic', 'pro']);
    expect(await limitsAt(id, h.clock.ms + DAY - 1)).toMatchObject({ maxDevices: 5 });
    expect(await limitsAt(id, h.clock.ms + DAY)).toMatchObject({ maxDevices: 1 });
    h.clock.ms += DAY;
    expect(await entitlementsOf('eve')).toEqual(['basic']);
  });

  it('a lifetime license has nothing to renew', async () => {
    const forever = await template({ name: 'forever', lifetime: true, entitlements: ['pro'], max_devices: 5 });
    const id = await h.signUp(app, 'eve', PASSWORD, 'hw-1');
    const code = (await codes(forever))[0]!;
    await redeem('eve', code);
    await renew(code, id, 1440);
    expect(await grantEnds(id, 'pro')).toEqual([null]);
  });
});

describe('a refund pulls in what stacked on the redemption it takes back (endHolding, shortenHolding: the sales refunds call them)', () => {
  const licenseIdOf = async (code: string): Promise<string> => (await h.admin('GET', `/apps/${app.id}/licenses?q=${code}`)).json().items[0].id;
  const giveBack = async (userId: string, fn: (tx: Parameters<Parameters<typeof write>[1]>[0]['tx']) => Promise<void>) => {
    await write(h.tollgate.services, async ({ tx, changed }) => {
      await fn(tx);
      changed({ user: userId });
    });
    await noticesHeard(h);
  };

  it('a Pro month refunded under a Pro day stacked on it: the day (and its 5 devices) moves in to a day from now', async () => {
    const month = await template({ name: 'Pro 30 days', minutes: 30 * 1440, entitlements: ['pro'], max_devices: 5 });
    const day = await template({ name: 'Pro 1 day', minutes: 1440, entitlements: ['pro'], max_devices: 5 });
    const id = await h.signUp(app, 'mallory', PASSWORD, 'hw-1');
    const [monthCode] = await codes(month);
    expect((await redeem('mallory', monthCode!)).statusCode).toBe(200);
    expect((await redeem('mallory', (await codes(day))[0]!)).statusCode).toBe(200);
    expect(await grantEnds(id, 'pro')).toEqual([h.clock.iso(30 * DAY), h.clock.iso(31 * DAY)]);
    const licenseId = await licenseIdOf(monthCode!);
    await giveBack(id, (tx) => endHolding(tx, licenseId, id, h.clock.ms));
    expect(await grantEnds(id, 'pro')).toEqual([h.clock.iso(0), h.clock.iso(DAY)]);
    expect((await limitsAt(id, h.clock.ms + DAY - 1)).maxDevices).toBe(5);
    expect((await limitsAt(id, h.clock.ms + DAY)).maxDevices).toBe(1);
  });

  it('a refunded renewal of the month (10 days back) moves the day stacked on it in by 10 days; other codes stay', async () => {
    const month = await template({ name: 'Pro 30 days', minutes: 30 * 1440, entitlements: ['pro'], max_devices: 5 });
    const day = await template({ name: 'Pro 1 day', minutes: 1440, entitlements: ['pro'], max_devices: 5 });
    const basic = await template({ name: 'Basic 60 days', minutes: 60 * 1440, entitlements: ['basic'] });
    const id = await h.signUp(app, 'trent', PASSWORD, 'hw-1');
    expect((await redeem('trent', (await codes(basic))[0]!)).statusCode).toBe(200);
    const [monthCode] = await codes(month);
    expect((await redeem('trent', monthCode!)).statusCode).toBe(200);
    expect((await redeem('trent', (await codes(day))[0]!)).statusCode).toBe(200);
    const licenseId = await licenseIdOf(monthCode!);
    await giveBack(id, (tx) => shortenHolding(tx, licenseId, id, 10 * 1440, h.clock.ms));
    expect(await grantEnds(id, 'pro')).toEqual([h.clock.iso(20 * DAY), h.clock.iso(21 * DAY)]);
    expect(await grantEnds(id, 'basic')).toEqual([h.clock.iso(60 * DAY)]);
    expect((await limitsAt(id, h.clock.ms + 21 * DAY - 1)).maxDevices).toBe(5);
    expect((await limitsAt(id, h.clock.ms + 21 * DAY)).maxDevices).toBe(1);
  });
});
