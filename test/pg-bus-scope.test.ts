/**
 * The cache bus is the schema's (src/store/postgres.ts, `scoped`): two deployments in one PostgreSQL database, each
 * in its own schema, never hear each other's change notices, and two nodes on one schema still do. The test
 * harnesses are such deployments: before, every harness of a run heard every other's notices, and a notice from
 * another test file could empty a cache a fast-path test had just warmed.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Db } from '../src/store/db.js';
import { openDb } from '../src/store/open.js';
import type { PostgresDb } from '../src/store/postgres.js';
import { usersKey } from '../src/domain/caches.js';
import { STORE, harness, noticesHeard, type Harness } from './helpers.js';
import { until } from './log-capture.js';

describe.skipIf(STORE !== 'postgres')('the cache bus is scoped to the schema (PostgreSQL project only: SQLite has no bus)', () => {
  const open: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    for (const o of open.splice(0).reverse()) await o.close();
  });
  const track = <T extends { close(): Promise<void> }>(o: T): T => {
    open.push(o);
    return o;
  };

  it('a notice reaches the nodes on its schema, never a deployment in another schema of the same database', async () => {
    const a: Harness = track(await harness());
    const b: Harness = track(await harness());
    const dbA = a.tollgate.services.store.db as PostgresDb;
    const dbB = b.tollgate.services.store.db as PostgresDb;
    // A second node of deployment A: the same URL, so the same schema.
    const secondA: Db = track(await openDb(dbA.options.url));
    const heard: Record<'secondA' | 'b', string[]> = { secondA: [], b: [] };
    await secondA.bus!.subscribe('scope_probe', (p) => heard.secondA.push(p));
    await dbB.bus.subscribe('scope_probe', (p) => heard.b.push(p));

    await dbA.bus.publish('scope_probe', 'from A');
    await dbB.bus.publish('scope_probe', 'from B');
    // Notices reach a listener in commit order: once B hears its own, it would have heard A's before it.
    await until(() => heard.b.includes('from B') && heard.secondA.includes('from A'));
    expect(heard.b).toEqual(['from B']);
    expect(heard.secondA).toEqual(['from A']);
  });

  it("a change that drops every user of an app (the app deleted) in one schema leaves another schema's users cached", async () => {
    const a: Harness = track(await harness());
    const b: Harness = track(await harness());
    const app = await b.createApp();
    const id = await b.activeUser(app, 'uma');
    const token = await b.login(app, 'uma');
    const res = await b.client(app, 'GET', '/app_context', undefined, { authorization: `Bearer ${token}` });
    expect(res.statusCode, res.body).toBe(200);
    const cached = () => b.tollgate.services.caches.users.peek(usersKey(app.id, id));
    expect(cached()).toBeDefined();
    await a.tollgate.services.caches.changed({ appUsers: app.id });
    await noticesHeard(b); // B's probe, sent after A's notice: heard after it, were it heard at all
    expect(cached()).toBeDefined();
    // Control: the same change in B's own schema does drop it.
    await b.tollgate.services.caches.changed({ appUsers: app.id });
    expect(cached()).toBeUndefined();
  });
});
