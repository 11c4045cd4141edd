import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, admin, call, startNode, stopNode, type Node } from './cluster/nodes.js';
import { PASSWORD, STORE } from './helpers.js';

/**
 * `tollgate seats list|release` and the seat and self-reset settings of `tollgate apps update` (issue 25), as a
 * user runs them: the built CLI against a real server process on a temporary SQLite file.
 */
const MAIN = resolve(import.meta.dirname, '../dist/cli/main.js');

function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [MAIN, ...args], { env: { ...process.env, NO_COLOR: '1', TOLLGATE_URL: '', TOLLGATE_APP: '' }, encoding: 'utf8', timeout: 20_000 }, (err, stdout, stderr) => {
      done({ code: err ? Number((err as { code?: unknown }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

describe.skipIf(STORE !== 'sqlite')('tollgate seats', () => {
  let node: Node;
  let dir: string;
  let appId: string;
  let headers: Record<string, string>;
  const flags = () => ['--url', node.url, '--token', ADMIN_TOKEN, '--app', appId];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tollgate-cli-seats-'));
    node = await startNode(`sqlite:${join(dir, 'db.sqlite')}`);
    const created = await admin(node.url, 'POST', '/apps', { name: 'Seats', max_devices_per_user: 10 });
    appId = created.body.id;
    headers = { 'x-api-key': created.body.api_key, 'x-api-secret': created.body.api_secret };
  }, 60_000);

  afterAll(async () => {
    await stopNode(node);
    rmSync(dir, { recursive: true, force: true });
  });

  it('apps update sets the seat and self-reset settings (off for the nullable ones); seats list and release', async () => {
    const set = await cli('apps', 'update', appId, '--max-seats', '2', '--heartbeat-seconds', '120', '--seat-grace-seconds', '30', '--device-reset-cooldown-seconds', '3600', '--device-resets-per-year', '4', '--json', ...flags());
    expect(set.code, set.stderr).toBe(0);
    expect(JSON.parse(set.stdout)).toMatchObject({ max_seats: 2, heartbeat_seconds: 120, seat_grace_seconds: 30, device_reset_cooldown_seconds: 3600, device_resets_per_year: 4 });
    const off = await cli('apps', 'update', appId, '--device-resets-per-year', 'off', '--json', ...flags());
    expect(off.code, off.stderr).toBe(0);
    expect(JSON.parse(off.stdout).device_resets_per_year).toBeNull();

    const signed = await call(node.url, 'POST', '/sign_up', { headers, body: { username: 'alice', password: PASSWORD } });
    const license = await admin(node.url, 'POST', `/apps/${appId}/licenses`, { count: 1, minutes: 60 });
    await call(node.url, 'POST', '/activate_license', { headers, body: { code: license.body.licenses[0].code, username: 'alice', password: PASSWORD } });
    const seat = await call(node.url, 'POST', '/seats', { headers: { ...headers, 'x-api-username': 'alice', 'x-api-password': PASSWORD, 'x-hardware-id': 'hw-1' } });
    expect(seat.status).toBe(200);

    const listed = await cli('seats', 'list', '--json', ...flags());
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout)).toMatchObject({ total: 1, items: [{ id: seat.body.seat.id, user_id: signed.body.id, hardware_id: 'hw-1' }] });
    const table = await cli('seats', 'list', '--user', signed.body.id, ...flags());
    expect(table.stdout).toContain(seat.body.seat.id);

    const released = await cli('seats', 'release', seat.body.seat.id, ...flags());
    expect(released.code, released.stderr).toBe(0);
    expect(released.stdout).toContain(`released seat ${seat.body.seat.id}`);
    expect((await cli('seats', 'list', ...flags())).stdout).toContain('(none)');
    const again = await cli('seats', 'release', seat.body.seat.id, ...flags());
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain('Seat not found');
  });
});
