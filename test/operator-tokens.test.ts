import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AuditView } from '../src/domain/admin/audit.js';
import { digest } from '../src/domain/tokens.js';
import { ADMIN_TOKEN, harness, STORE, type Harness, writableStore } from './helpers.js';
import { makeOperator, signIn, withToken, type Session } from './operator-helpers.js';

/**
 * Issue 30, item 1: an admin token records the operator who minted it, and
 * goes with them. Deleting or disabling the operator revokes their tokens
 * (one audit entry per token), demoting caps them at the new role
 * (docs/decisions.md, "Tokens follow their operator").
 */

let h: Harness;
beforeEach(async () => {
  h = await harness();
});
afterEach(async () => h.close());

async function mint(via: Session | string, name: string, role?: string): Promise<{ id: string; token: string; operator_id: string | null; operator_username: string | null }> {
  const body = { name, ...(role && { role }) };
  const res = typeof via === 'string' ? await withToken(h, via, 'POST', '/tokens', body) : await via.call('POST', '/tokens', body);
  expect(res.statusCode, res.body).toBe(201);
  return res.json();
}

const whoami = (token: string) => withToken(h, token, 'GET', '/whoami');

async function auditOf(targetId: string): Promise<AuditView[]> {
  const res = await h.admin('GET', `/audit?target_id=${targetId}`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().items;
}

async function tokenRow(id: string) {
  const res = await h.admin('GET', '/tokens?limit=500');
  return (res.json().items as { id: string; role: string; revoked_at: string | null; operator_id: string | null; operator_username: string | null }[]).find((t) => t.id === id)!;
}

describe('admin tokens follow the operator who minted them', () => {
  it('the issue: operator signs in, mints a token, the owner deletes the operator; the token is refused (401) and its row says who minted it', async () => {
    const opId = await makeOperator(h, 'mallory', 'admin');
    const session = await signIn(h, 'mallory');
    const minted = await mint(session, 'mallory-ci');
    expect(minted).toMatchObject({ operator_id: opId, operator_username: 'mallory' });
    expect((await whoami(minted.token)).statusCode).toBe(200);

    expect((await h.admin('DELETE', `/operators/${opId}`)).statusCode).toBe(204);
    expect((await session.call('GET', '/whoami')).statusCode).toBe(401);
    const after = await whoami(minted.token);
    expect(after.statusCode, after.body).toBe(401);
    expect(after.json().code).toBe('invalid_admin_token');

    const row = await tokenRow(minted.id);
    expect(row.revoked_at).not.toBeNull();
    expect(row).toMatchObject({ operator_id: opId, operator_username: 'mallory' });
    const entries = await auditOf(minted.id);
    expect(entries.map((e) => e.action)).toEqual(['admin_token.revoke', 'admin_token.create']);
    expect(entries[0]!.details).toMatchObject({ reason: 'operator deleted', operator_id: opId, operator_username: 'mallory' });
  });

  it('tokens minted with such a token are the operator’s too, and go with them; one audit entry per token', async () => {
    const opId = await makeOperator(h, 'erin', 'admin');
    const session = await signIn(h, 'erin');
    const first = await mint(session, 'erin-a');
    const second = await mint(session, 'erin-b', 'viewer');
    const child = await mint(first.token, 'erin-child');
    expect(child).toMatchObject({ operator_id: opId, operator_username: 'erin' });
    const bystander = await mint(ADMIN_TOKEN, 'env-made');
    expect(bystander.operator_id).toBeNull();

    const res = await h.admin('PATCH', `/operators/${opId}`, { disabled: true });
    expect(res.statusCode, res.body).toBe(200);
    for (const t of [first, second, child]) {
      expect((await whoami(t.token)).statusCode).toBe(401);
      const revokes = (await auditOf(t.id)).filter((e) => e.action === 'admin_token.revoke');
      expect(revokes).toHaveLength(1);
      expect(revokes[0]!.details).toMatchObject({ reason: 'operator disabled', operator_id: opId });
    }
    expect((await whoami(bystander.token)).statusCode).toBe(200);

    // Enabling the operator again brings nothing back.
    expect((await h.admin('PATCH', `/operators/${opId}`, { disabled: false })).statusCode).toBe(200);
    expect((await whoami(first.token)).statusCode).toBe(401);
  });

  it('demoting caps the operator’s tokens at the new role (audited), leaves lower ones alone, and promoting restores nothing', async () => {
    const opId = await makeOperator(h, 'dave', 'admin');
    const session = await signIn(h, 'dave');
    const high = await mint(session, 'dave-admin');
    const low = await mint(session, 'dave-viewer', 'viewer');

    expect((await h.admin('PATCH', `/operators/${opId}`, { role: 'support' })).statusCode).toBe(200);
    const me = await whoami(high.token);
    expect(me.statusCode).toBe(200);
    expect(me.json().role).toBe('support');
    expect((await withToken(h, high.token, 'POST', '/apps', { name: 'not for support' })).statusCode).toBe(403);
    expect((await whoami(low.token)).json().role).toBe('viewer');
    const updates = (await auditOf(high.id)).filter((e) => e.action === 'admin_token.update');
    expect(updates).toHaveLength(1);
    expect(updates[0]!.details).toMatchObject({ before: { role: 'admin' }, after: { role: 'support' }, operator_id: opId });
    expect((await auditOf(low.id)).filter((e) => e.action === 'admin_token.update')).toHaveLength(0);

    expect((await h.admin('PATCH', `/operators/${opId}`, { role: 'admin' })).statusCode).toBe(200);
    expect((await tokenRow(high.id)).role).toBe('support');
  });

  it('a new password alone leaves the tokens working (it answers a leaked password, not a leaked token)', async () => {
    const opId = await makeOperator(h, 'carol', 'admin');
    const t = await mint(await signIn(h, 'carol'), 'carol-ci');
    expect((await h.admin('PATCH', `/operators/${opId}`, { password: 'another password 0123' })).statusCode).toBe(200);
    expect((await whoami(t.token)).statusCode).toBe(200);
  });
});

/**
 * Review finding 4: a mint in flight while its operator goes. The race made
 * deterministic: the store is hooked so the owner's change commits right
 * after the minting call was authenticated, before its insert.
 */
describe('a token minted while its operator is deleted, disabled or demoted', () => {
  /** Runs `change` once, right after the call presenting `token` (or the session `cookie`) is authenticated. */
  function afterAuthOf(credential: { token: string } | { cookie: string }, change: () => Promise<unknown>): void {
    const store = writableStore(h.tollgate.services);
    let pending = true;
    if ('token' in credential) {
      const original = store.admin.findLiveToken;
      store.admin.findLiveToken = async (hash) => {
        const found = await original(hash);
        if (pending && hash === digest(credential.token)) pending = false, await change();
        return found;
      };
    } else {
      const original = store.operators.findSession;
      store.operators.findSession = async (hash) => {
        const found = await original(hash);
        if (pending && found) pending = false, await change();
        return found;
      };
    }
  }

  async function liveTokensOf(operatorId: string) {
    const res = await h.admin('GET', '/tokens?limit=500');
    return (res.json().items as { role: string; operator_id: string | null; revoked_at: string | null }[]).filter((t) => t.operator_id === operatorId && t.revoked_at === null);
  }

  for (const [what, change] of [
    ['deleted', (id: string) => h.admin('DELETE', `/operators/${id}`)],
    ['disabled', (id: string) => h.admin('PATCH', `/operators/${id}`, { disabled: true })],
  ] as const) {
    it(`${what}: the token's mint is refused (401, as the token is now) and nothing of the operator's stays live`, async () => {
      const opId = await makeOperator(h, `op-${what}`, 'admin');
      const a = await mint(await signIn(h, `op-${what}`), 'a');
      afterAuthOf(a, async () => expect((await change(opId)).statusCode).toBeLessThan(300));
      const res = await withToken(h, a.token, 'POST', '/tokens', { name: 'b' });
      expect(res.statusCode, res.body).toBe(401);
      expect(res.json().code).toBe('invalid_admin_token');
      expect(await liveTokensOf(opId)).toEqual([]);
    });

    it(`${what}: a session's mint is refused (401 not_authenticated)`, async () => {
      const opId = await makeOperator(h, `se-${what}`, 'admin');
      const session = await signIn(h, `se-${what}`);
      afterAuthOf(session, async () => expect((await change(opId)).statusCode).toBeLessThan(300));
      const res = await session.call('POST', '/tokens', { name: 'b' });
      expect(res.statusCode, res.body).toBe(401);
      expect(res.json().code).toBe('not_authenticated');
      expect(await liveTokensOf(opId)).toEqual([]);
    });
  }

  // SQLite runs one write transaction at a time by construction; on PostgreSQL the operator row's lock does it.
  it.skipIf(STORE !== 'postgres')('PostgreSQL: a delete that starts while the mint holds the operator row waits for it, then revokes the new token', async () => {
    const opId = await makeOperator(h, 'op-locked', 'admin');
    const a = await mint(await signIn(h, 'op-locked'), 'a');
    const store = writableStore(h.tollgate.services);
    const transaction = store.transaction;
    let deletion: Promise<{ statusCode: number }> | undefined;
    store.transaction = (fn) => transaction((tx) => {
      const findForUpdate = tx.operators.findForUpdate;
      tx.operators.findForUpdate = async (id) => {
        const found = await findForUpdate(id);
        if (!deletion) {
          let settled = false;
          deletion = h.admin('DELETE', `/operators/${opId}`).finally(() => (settled = true));
          // Until the delete waits on a lock (or, without one, has finished: the test then fails below).
          for (let i = 0; !settled && i < 2000; i++) {
            const blocked = await store.db.one<{ n: number | string }>(
              `SELECT COUNT(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'DELETE FROM operators WHERE id = %'`,
            );
            if (Number(blocked?.n) > 0) break;
            await new Promise((r) => setTimeout(r, 10));
          }
        }
        return found;
      };
      return fn(tx);
    });
    const res = await withToken(h, a.token, 'POST', '/tokens', { name: 'b' });
    store.transaction = transaction;
    expect(res.statusCode, res.body).toBe(201);
    expect((await deletion!).statusCode).toBe(204);
    expect(await liveTokensOf(opId)).toEqual([]);
    expect((await auditOf(res.json().id)).map((e) => e.action)).toEqual(['admin_token.revoke', 'admin_token.create']);
  });

  it('demoted below minting (admin to support): refused (403), and the token stays capped', async () => {
    const opId = await makeOperator(h, 'op-support', 'admin');
    const a = await mint(await signIn(h, 'op-support'), 'a');
    afterAuthOf(a, async () => expect((await h.admin('PATCH', `/operators/${opId}`, { role: 'support' })).statusCode).toBe(200));
    const res = await withToken(h, a.token, 'POST', '/tokens', { name: 'b', role: 'viewer' });
    expect(res.statusCode, res.body).toBe(403);
    expect(res.json().code).toBe('forbidden');
    expect((await liveTokensOf(opId)).map((t) => t.role)).toEqual(['support']);
  });

  it('demoted (owner to admin): a role above the new one is refused (403), one within it is still minted', async () => {
    await makeOperator(h, 'spare-owner', 'owner'); // the last active owner cannot be demoted
    const opId = await makeOperator(h, 'op-owner', 'owner');
    const session = await signIn(h, 'op-owner');
    const a = await mint(session, 'a');
    afterAuthOf(a, async () => expect((await h.admin('PATCH', `/operators/${opId}`, { role: 'admin' })).statusCode).toBe(200));
    const res = await withToken(h, a.token, 'POST', '/tokens', { name: 'b', role: 'owner' });
    expect(res.statusCode, res.body).toBe(403);
    expect(res.json().code).toBe('forbidden');
    expect((await liveTokensOf(opId)).map((t) => t.role)).toEqual(['admin']);

    expect(await mint(a.token, 'c', 'admin')).toMatchObject({ role: 'admin', operator_id: opId });
  });
});
