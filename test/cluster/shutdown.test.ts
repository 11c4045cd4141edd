import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { admin, call, startNode } from './nodes.js';

const dir = mkdtempSync(join(tmpdir(), 'tollgate-shutdown-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('graceful shutdown', () => {
  it('SIGTERM finishes the requests in flight, then exits 0; a restart serves again', async () => {
    const databaseUrl = `sqlite:${join(dir, 'db.sqlite')}`;
    const node = await startNode(databaseUrl, { LOG_LEVEL: 'info' });
    const app = await admin(node.url, 'POST', '/apps', { name: 'Shutdown' });
    const headers = { 'x-api-key': app.body.api_key, 'x-api-secret': app.body.api_secret };
    // Sign-ups take an argon2 hash each (tens of ms): some are still running when the signal arrives.
    const inflight = Array.from({ length: 6 }, (_, i) => call(node.url, 'POST', '/sign_up', { body: { username: `late${i}`, password: 'long enough password' }, headers }));
    await new Promise((r) => setTimeout(r, 15));
    const exited = new Promise<number | null>((r) => node.process.once('exit', (code) => r(code)));
    node.process.kill('SIGTERM');
    const results = await Promise.all(inflight);
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(await exited).toBe(0);
    expect(node.output.join('')).toContain('shutting down');

    const again = await startNode(databaseUrl);
    try {
      const users = await admin(again.url, 'GET', `/apps/${app.body.id}/users`);
      expect(users.body.items).toHaveLength(6);
    } finally {
      again.process.kill('SIGTERM');
    }
  });
});
