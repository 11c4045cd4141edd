import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, expectError, harness, type Harness, type TestApp, writableStore } from './helpers.js';

/** Issue 30 item 5: the admin writes that were accepted although they make no sense. */

let h: Harness;
let app: TestApp;
beforeEach(async () => {
  h = await harness();
  app = await h.createApp();
});
afterEach(async () => h.close());

const upload = (name: string) =>
  h.inject({
    method: 'POST', url: `/admin/v1/apps/${app.id}/files?name=${encodeURIComponent(name)}`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/octet-stream' }, payload: Buffer.from('content'),
  });

async function fileCount(): Promise<number> {
  return (await h.admin('GET', `/apps/${app.id}/files`)).json().items.length;
}

async function banCount(): Promise<number> {
  return (await h.admin('GET', `/apps/${app.id}/bans?with_total=true`)).json().total;
}

describe('file names . and ..', () => {
  it('an upload named . or .. is 422 naming querystring.name, and stores nothing', async () => {
    for (const name of ['.', '..']) {
      const body = expectError(await upload(name), 422, 'validation_error');
      expect(body.errors, name).toEqual([{ field: 'querystring.name', message: 'must not be . or ..' }]);
    }
    expect(await fileCount()).toBe(0);
    // Names that merely contain dots stay what they were.
    for (const name of ['...', '.hidden', 'a..b', '..bin']) expect((await upload(name)).statusCode, name).toBe(201);
  });

  it('a rename to . or .. is 422 naming body.name; the file keeps its name', async () => {
    const created = await upload('report.pdf');
    const id = created.json().id as string;
    for (const name of ['.', '..']) {
      const body = expectError(await h.admin('PATCH', `/apps/${app.id}/files/${id}`, { name }), 422, 'validation_error');
      expect(body.errors, name).toEqual([{ field: 'body.name', message: 'must not be . or ..' }]);
    }
    const bad = expectError(await h.admin('PATCH', `/apps/${app.id}/files/${id}`, { mime_type: 'no type' }), 422, 'validation_error');
    expect(bad.errors?.[0]?.field).toBe('body.mime_type');
    expect((await h.admin('GET', `/apps/${app.id}/files/${id}`)).json().name).toBe('report.pdf');
  });

  it('a name stored before the rule does not block changing the media type', async () => {
    const id = (await upload('x.bin')).json().id as string;
    await writableStore(h.tollgate.services).files.updateMeta(app.id, id, '..', 'application/octet-stream', false, h.clock.ms);
    const res = await h.admin('PATCH', `/apps/${app.id}/files/${id}`, { mime_type: 'text/plain' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ name: '..', mime_type: 'text/plain' });
  });
});

describe('bans that ban nobody more', () => {
  it('an expires_at now or in the past is 422 naming body.expires_at; a second later is fine', async () => {
    for (const at of [h.clock.iso(-86_400_000), h.clock.iso(-1), h.clock.iso(0), '2000-01-01T00:00:00Z']) {
      const body = expectError(await h.admin('POST', `/apps/${app.id}/bans`, { type: 'ip', value: '203.0.113.9', expires_at: at }), 422, 'validation_error');
      expect(body.errors?.map((e) => e.field), at).toEqual(['body.expires_at']);
    }
    expect(await banCount()).toBe(0);
    const res = await h.admin('POST', `/apps/${app.id}/bans`, { type: 'ip', value: '203.0.113.9', expires_at: h.clock.iso(1000) });
    expect(res.statusCode, res.body).toBe(201);
  });

  it('the same ban again while the first is in force is 409 conflict naming the ban in force; nothing is added', async () => {
    const user = await h.signUp(app, 'mallory');
    const cases: [string, string, string][] = [
      ['ip', '203.0.113.0/24', '203.0.113.0/24'],
      ['ip', '2001:DB8::1', '2001:db8::1'], // the same address spelled another way is the same ban
      ['hardware_id', 'HW-1', 'HW-1'],
      ['user', user, user.toUpperCase()],
    ];
    for (const [type, first, again] of cases) {
      const id = await h.ban(app, type, first, { reason: 'first' });
      const before = await banCount();
      // A different reason or end does not make it another ban: it would still ban the same thing.
      const body = expectError(await h.admin('POST', `/apps/${app.id}/bans`, { type, value: again, reason: 'second', expires_at: h.clock.iso(60_000) }), 409, 'conflict');
      expect(body.detail, `${type} ${again}`).toContain(id);
      expect(await banCount()).toBe(before);
    }
  });

  it('the same value under another type, or in another app, is not a duplicate', async () => {
    await h.ban(app, 'hardware_id', 'SHARED-1');
    expect((await h.admin('POST', `/apps/${app.id}/bans`, { type: 'ip', value: '198.51.100.1' })).statusCode).toBe(201);
    const other = await h.createApp({ name: 'Other' });
    expect((await h.admin('POST', `/apps/${other.id}/bans`, { type: 'hardware_id', value: 'SHARED-1' })).statusCode).toBe(201);
  });

  it('once the first has lifted itself or been lifted, the same ban can be made again', async () => {
    await h.ban(app, 'hardware_id', 'HW-2', { expires_at: h.clock.iso(60_000) });
    h.clock.advance(60_000);
    expect((await h.admin('POST', `/apps/${app.id}/bans`, { type: 'hardware_id', value: 'HW-2' })).statusCode).toBe(201);
    const id = (await h.admin('GET', `/apps/${app.id}/bans?type=hardware_id`)).json().items.at(-1).id as string;
    expect((await h.admin('DELETE', `/apps/${app.id}/bans/${id}`)).statusCode).toBe(204);
    expect((await h.admin('POST', `/apps/${app.id}/bans`, { type: 'hardware_id', value: 'HW-2' })).statusCode).toBe(201);
  });

  it('ten identical bans sent at once: one is created, the other nine are 409', async () => {
    const value = 'HW-' + randomUUID();
    const answers = await Promise.all(Array.from({ length: 10 }, () => h.admin('POST', `/apps/${app.id}/bans`, { type: 'hardware_id', value })));
    expect(answers.map((r) => r.statusCode).sort()).toEqual([201, ...Array<number>(9).fill(409)]);
    expect((await h.admin('GET', `/apps/${app.id}/bans?type=hardware_id&with_total=true`)).json().total).toBe(1);
  });
});
