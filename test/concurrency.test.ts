import type { LightMyRequestResponse } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { errorOf, harness, PASSWORD, type Harness, type TestApp } from './helpers.js';

/**
 * Races through the in-process server: the requests are started together and
 * interleave at every await (password hashing runs off the main thread).
 * Rate limits are off so that only the single-use and uniqueness rules decide;
 * each request also comes from its own IP.
 */
describe('concurrency (SPEC 4.7 rule 1, SPEC 8, DECISIONS uniqueness)', () => {
  let h: Harness;
  let app: TestApp;

  beforeEach(async () => {
    h = await harness({ env: { RATE_LIMIT: 'off' } });
    app = await h.createApp();
  });
  afterEach(async () => h.close());

  function ipOf(i: number): string {
    return `10.0.${Math.floor(i / 250)}.${(i % 250) + 1}`;
  }

  function post(url: string, body: Record<string, unknown>, i: number): Promise<LightMyRequestResponse> {
    return h.inject({ method: 'POST', url, headers: app.headers, payload: body, remoteAddress: ipOf(i) });
  }

  async function oneLicense(): Promise<{ id: string; code: string }> {
    const res = await h.admin('POST', `/apps/${app.id}/licenses`, { count: 1, minutes: 60 });
    expect(res.statusCode).toBe(201);
    const [l] = res.json().licenses as { id: string; code: string }[];
    if (!l) throw new Error('no license');
    return l;
  }

  /** Splits responses into the successes and the rest, asserting that none is a 5xx. */
  function partition(responses: LightMyRequestResponse[]): { ok: LightMyRequestResponse[]; failed: LightMyRequestResponse[] } {
    for (const r of responses) expect(r.statusCode, r.body).toBeLessThan(500);
    return { ok: responses.filter((r) => r.statusCode === 200), failed: responses.filter((r) => r.statusCode !== 200) };
  }

  /**
   * Makes a pre-check read wait until `n` callers have made it (or a second
   * has passed), so every racer sees the same "free" answer before any of them
   * writes: only the atomic claim in the store can then keep the rule. It
   * patches this harness's store instance only.
   */
  function barrier(n: number): () => Promise<void> {
    let arrived = 0;
    const waiting: (() => void)[] = [];
    return () => {
      arrived++;
      if (arrived >= n) {
        for (const release of waiting.splice(0)) release();
        return Promise.resolve();
      }
      return new Promise<void>((resolve) => {
        waiting.push(resolve);
        setTimeout(resolve, 1000);
      });
    };
  }

  function holdLicenseReads(n: number): void {
    const licenses = h.tollgate.services.store.licenses;
    const read = licenses.findByCode.bind(licenses);
    const wait = barrier(n);
    licenses.findByCode = async (appId, code) => {
      const found = await read(appId, code);
      await wait();
      return found;
    };
  }

  function holdUsernameChecks(n: number): void {
    const users = h.tollgate.services.store.users;
    const check = users.existsByUsernameKey.bind(users);
    const wait = barrier(n);
    users.existsByUsernameKey = async (appId, key) => {
      const taken = await check(appId, key);
      await wait();
      return taken;
    };
  }

  async function allUsers(): Promise<{ id: string; username: string; signupLicenseId: string | null }[]> {
    return (await h.tollgate.services.store.users.list(app.id, null, null, 500)).items;
  }

  it('SPEC 4.7 rule 1: 50 parallel activations of one code by 50 users: exactly one 200, the rest 401 license_used, no 5xx', async () => {
    const names = Array.from({ length: 50 }, (_, i) => `user${String(i).padStart(2, '0')}`);
    const ids = new Map<string, string>();
    for (const name of names) ids.set(name, await h.signUp(app, name));
    const l = await oneLicense();

    const responses = await Promise.all(names.map((username, i) => post('/activate_license', { code: l.code, username, password: PASSWORD }, i)));
    const { ok, failed } = partition(responses);
    expect(ok).toHaveLength(1);
    expect(failed).toHaveLength(49);
    for (const r of failed) {
      expect(r.statusCode).toBe(401);
      expect(errorOf(r).code).toBe('license_used');
    }

    // The winner is the one user the license records, and the only one with time.
    const winner = names[responses.indexOf(ok[0]!)]!;
    const winnerId = ids.get(winner)!;
    const license = await h.admin('GET', `/apps/${app.id}/licenses/${l.id}`);
    expect(license.json().used_by_user_id).toBe(winnerId);
    expect(ok[0]!.json().license_id).toBe(l.id);

    let activations = 0;
    let withTime = 0;
    for (const id of ids.values()) {
      activations += (await h.tollgate.services.store.licenses.activationsOf(id)).length;
      const u = await h.tollgate.services.store.users.findById(app.id, id);
      if (u?.activeUntil !== null) withTime++;
    }
    expect(activations).toBe(1);
    expect(withTime).toBe(1);
    const u = await h.tollgate.services.store.users.findById(app.id, winnerId);
    expect(u?.activeUntil).toBe(h.clock.ms + 60 * 60_000);
  });

  it('SPEC 4.7 rule 2: 10 parallel activations of 10 different codes by one user all count (active_until = now + 10 × 60 min)', async () => {
    const userId = await h.signUp(app, 'alice');
    const res = await h.admin('POST', `/apps/${app.id}/licenses`, { count: 10, minutes: 60 });
    expect(res.statusCode).toBe(201);
    const codes = (res.json().licenses as { code: string }[]).map((l) => l.code);
    const responses = await Promise.all(codes.map((code, i) => post('/activate_license', { code, username: 'alice', password: PASSWORD }, i)));
    const { ok } = partition(responses);
    expect(ok).toHaveLength(10);
    const u = await h.tollgate.services.store.users.findById(app.id, userId);
    expect(u?.activeUntil).toBe(h.clock.ms + 10 * 60 * 60_000);
    expect(await h.tollgate.services.store.licenses.activationsOf(userId)).toHaveLength(10);
  });

  it('SPEC 4.2 rule 2 / SPEC 8: 50 parallel license sign-ups with one code: exactly one 200, the rest 422 license_used, one user', async () => {
    const l = await oneLicense();
    const responses = await Promise.all(Array.from({ length: 50 }, (_, i) => post('/sign_up_with_license_code', { code: l.code }, i)));
    const { ok, failed } = partition(responses);
    expect(ok).toHaveLength(1);
    expect(failed).toHaveLength(49);
    for (const r of failed) {
      expect(r.statusCode).toBe(422);
      expect(errorOf(r).code).toBe('license_used');
    }

    const winner = ok[0]!.json();
    expect(winner.membership.is_active).toBe(true);
    const users = await allUsers();
    expect(users).toHaveLength(1);
    expect(users[0]).toMatchObject({ id: winner.id, username: winner.username, signupLicenseId: l.id });
    const bySignup = await h.tollgate.services.store.users.findBySignupLicense(app.id, l.id);
    expect(bySignup?.id).toBe(winner.id);
    const license = await h.admin('GET', `/apps/${app.id}/licenses/${l.id}`);
    expect(license.json().used_by_user_id).toBe(winner.id);
    expect(await h.tollgate.services.store.licenses.activationsOf(winner.id)).toHaveLength(1);
  });

  it('SPEC 4.7 rule 1: a code raced between a license sign-up and an activation is used exactly once', async () => {
    const names = Array.from({ length: 10 }, (_, i) => `racer${i}`);
    for (const name of names) await h.signUp(app, name);
    const l = await oneLicense();
    const requests: Promise<LightMyRequestResponse>[] = [];
    for (let i = 0; i < 10; i++) {
      requests.push(post('/sign_up_with_license_code', { code: l.code }, 2 * i));
      requests.push(post('/activate_license', { code: l.code, username: names[i]!, password: PASSWORD }, 2 * i + 1));
    }
    const responses = await Promise.all(requests);
    const { ok, failed } = partition(responses);
    expect(ok).toHaveLength(1);
    for (const r of failed) {
      expect([401, 422]).toContain(r.statusCode);
      expect(errorOf(r).code).toBe('license_used');
    }
    const users = await allUsers();
    // 10 password users, plus one generated user only if the sign-up won.
    const generated = users.filter((u) => u.signupLicenseId !== null);
    expect(generated.length).toBe(responses.indexOf(ok[0]!) % 2 === 0 ? 1 : 0);
    expect(users).toHaveLength(10 + generated.length);
  });

  it('DECISIONS uniqueness: 20 parallel sign-ups of the same username: exactly one 200, the rest 422 username_taken', async () => {
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) => post('/sign_up', { username: 'alice', password: `${PASSWORD} ${i}` }, i)),
    );
    const { ok, failed } = partition(responses);
    expect(ok).toHaveLength(1);
    expect(failed).toHaveLength(19);
    for (const r of failed) {
      expect(r.statusCode).toBe(422);
      expect(errorOf(r).code).toBe('username_taken');
    }
    const users = await allUsers();
    expect(users).toHaveLength(1);
    expect(users[0]?.id).toBe(ok[0]!.json().id);

    // The stored password is the winner's.
    const winnerIndex = responses.indexOf(ok[0]!);
    const [code] = await h.licenses(app);
    const act = await h.client(app, 'POST', '/activate_license', { code, username: 'alice', password: `${PASSWORD} ${winnerIndex}` });
    expect(act.statusCode).toBe(200);
  });

  it('DECISIONS uniqueness: parallel sign-ups of case and NFKC variants of one name (alice, ALICE, ａｌｉｃｅ, …): exactly one 200', async () => {
    const variants = ['alice', 'ALICE', 'Alice', 'ａｌｉｃｅ', 'ＡＬＩＣＥ', 'aLiCe', 'alicE', 'ALIce'];
    const responses = await Promise.all(variants.map((username, i) => post('/sign_up', { username, password: PASSWORD }, i)));
    const { ok, failed } = partition(responses);
    expect(ok).toHaveLength(1);
    for (const r of failed) {
      expect(r.statusCode).toBe(422);
      expect(errorOf(r).code).toBe('username_taken');
    }
    const users = await allUsers();
    expect(users).toHaveLength(1);
    expect(users[0]?.username).toBe(variants[responses.indexOf(ok[0]!)]);
  });

  it('DECISIONS devices: parallel activations from new devices never exceed max_devices_per_user', async () => {
    const dev = await h.createApp({ device_auth_enabled: true, max_devices_per_user: 3 });
    const userId = await h.signUp(dev, 'alice', PASSWORD, 'HW-0');
    const res = await h.admin('POST', `/apps/${dev.id}/licenses`, { count: 10, minutes: 60 });
    const codes = (res.json().licenses as { code: string }[]).map((l) => l.code);
    const responses = await Promise.all(
      codes.map((code, i) =>
        h.inject({ method: 'POST', url: '/activate_license', headers: dev.headers, remoteAddress: ipOf(i), payload: { code, username: 'alice', password: PASSWORD, hardware_id: `HW-${i + 1}` } }),
      ),
    );
    const { ok, failed } = partition(responses);
    expect(ok).toHaveLength(2);
    for (const r of failed) {
      expect(r.statusCode).toBe(401);
      expect(errorOf(r).code).toBe('device_limit');
    }
    const devices = await h.tollgate.services.store.devices.listFor(userId);
    expect(devices).toHaveLength(3);
  });
  describe('forced interleaving: every racer passes the pre-check before any writes', () => {
    it('SPEC 4.7 rule 1: 50 activations that all saw the code unused: exactly one 200, the rest 401 license_used, one activation', async () => {
      const names = Array.from({ length: 50 }, (_, i) => `user${String(i).padStart(2, '0')}`);
      const ids: string[] = [];
      for (const name of names) ids.push(await h.signUp(app, name));
      const l = await oneLicense();
      holdLicenseReads(50);

      const responses = await Promise.all(names.map((username, i) => post('/activate_license', { code: l.code, username, password: PASSWORD }, i)));
      const { ok, failed } = partition(responses);
      expect(ok).toHaveLength(1);
      expect(failed).toHaveLength(49);
      for (const r of failed) {
        expect(r.statusCode).toBe(401);
        expect(errorOf(r).code).toBe('license_used');
      }
      const winnerId = ids[responses.indexOf(ok[0]!)]!;
      expect((await h.admin('GET', `/apps/${app.id}/licenses/${l.id}`)).json().used_by_user_id).toBe(winnerId);
      let activations = 0;
      let withTime = 0;
      for (const id of ids) {
        activations += (await h.tollgate.services.store.licenses.activationsOf(id)).length;
        if ((await h.tollgate.services.store.users.findById(app.id, id))?.activeUntil != null) withTime++;
      }
      expect(activations).toBe(1);
      expect(withTime).toBe(1);
    });

    it('SPEC 4.2 rule 2: 50 license sign-ups that all saw the code unused: exactly one 200, the rest 422 license_used, one user', async () => {
      const l = await oneLicense();
      holdLicenseReads(50);
      const responses = await Promise.all(Array.from({ length: 50 }, (_, i) => post('/sign_up_with_license_code', { code: l.code }, i)));
      const { ok, failed } = partition(responses);
      expect(ok).toHaveLength(1);
      expect(failed).toHaveLength(49);
      for (const r of failed) {
        expect(r.statusCode).toBe(422);
        expect(errorOf(r).code).toBe('license_used');
      }
      const users = await allUsers();
      expect(users).toHaveLength(1);
      expect(users[0]).toMatchObject({ id: ok[0]!.json().id, signupLicenseId: l.id });
      expect((await h.admin('GET', `/apps/${app.id}/licenses/${l.id}`)).json().used_by_user_id).toBe(ok[0]!.json().id);
    });

    it('DECISIONS uniqueness: 20 sign-ups that all saw the username free: exactly one 200, the rest 422 username_taken, one user', async () => {
      holdUsernameChecks(20);
      const responses = await Promise.all(Array.from({ length: 20 }, (_, i) => post('/sign_up', { username: 'alice', password: PASSWORD }, i)));
      const { ok, failed } = partition(responses);
      expect(ok).toHaveLength(1);
      expect(failed).toHaveLength(19);
      for (const r of failed) {
        expect(r.statusCode).toBe(422);
        expect(errorOf(r).code).toBe('username_taken');
      }
      const users = await allUsers();
      expect(users).toHaveLength(1);
      expect(users[0]?.id).toBe(ok[0]!.json().id);
    });
  });
});
