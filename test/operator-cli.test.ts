import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/index.js';
import { createTollgate } from '../src/wiring.js';
import { cleanEnv, MAIN, makeDatabase, oneLineFailure, pgBase, tempDir, type Run } from './cli-process.js';
import { fastHasher, STORE } from './helpers.js';

/** `tollgate operators create|list` (issue 16): the first owner, made on the machine that holds the database, then signing in over HTTP. */

const PASSWORD = 'first owner password';

/** The built CLI as a process, with this text on its standard input (not a terminal). */
function cli(args: string[], env: Record<string, string>, stdin = ''): Promise<Run> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [MAIN, ...args], { cwd: tempDir(), env: cleanEnv({ LOG_LEVEL: 'silent', ...env }), stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('exit', (code) => done({ code, stdout, stderr }));
    child.stdin.end(stdin);
  });
}

const schemas: { client: pg.Client; schema: string }[] = [];
afterAll(async () => {
  for (const { client, schema } of schemas) {
    await client.query(`DROP SCHEMA ${schema} CASCADE`);
    await client.end();
  }
});

/** A migrated, empty database of this project's store. */
async function database(): Promise<string> {
  if (STORE === 'sqlite') {
    const path = join(tempDir(), 'tollgate.db');
    await makeDatabase(path);
    return `sqlite:${path}`;
  }
  const client = new pg.Client({ connectionString: pgBase() });
  await client.connect();
  const schema = `cli_${randomBytes(6).toString('hex')}`;
  await client.query(`CREATE SCHEMA ${schema}`);
  schemas.push({ client, schema });
  const url = new URL(pgBase());
  url.searchParams.set('options', `-c search_path=${schema}`);
  const { migrate } = await import('../src/store/migrate.js');
  const { openDb } = await import('../src/store/open.js');
  const db = await openDb(url.toString());
  await migrate(db);
  await db.close();
  return url.toString();
}

describe('tollgate operators create', () => {
  it('creates the first owner from --password-stdin; the server then signs them in with the owner role', async () => {
    const url = await database();
    const made = await cli(['operators', 'create', 'root', '--role', 'owner', '--password-stdin'], { DATABASE_URL: url }, `${PASSWORD}\n`);
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout).toMatch(/^created operator root \(owner, [0-9a-f-]{36}\) in /);
    expect(`${made.stdout}${made.stderr}`).not.toContain(PASSWORD);

    const listed = await cli(['--json', 'operators', 'list'], { DATABASE_URL: url });
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout)).toMatchObject([{ username: 'root', role: 'owner', totp_enabled: false, disabled: false }]);

    const tollgate = await createTollgate(loadConfig({ DATABASE_URL: url, LOG_LEVEL: 'silent', RATE_LIMIT: 'off', TOLLGATE_ADMIN_TOKEN: 'cli-test-admin-token-0123456789' }), { hasher: fastHasher });
    try {
      const res = await tollgate.server.inject({ method: 'POST', url: '/admin/v1/session', payload: { username: 'root', password: PASSWORD } });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().operator).toMatchObject({ username: 'root', role: 'owner' });
      const audit = await tollgate.server.inject({ method: 'GET', url: '/admin/v1/audit?action=operator.create', headers: { authorization: 'Bearer cli-test-admin-token-0123456789' } });
      expect(audit.json().items[0].actor).toMatch(/^local:/);
    } finally {
      await tollgate.close();
    }

    expect(oneLineFailure(await cli(['operators', 'create', 'ROOT', '--role', 'admin', '--password-stdin'], { DATABASE_URL: url }, PASSWORD))).toMatch(/already exists/);
  });

  it('refuses a database that does not exist (and does not create it), a short password, a bad role, and no password source', async () => {
    const missing = join(tempDir(), 'nope', 'tollgate.db');
    expect(oneLineFailure(await cli(['operators', 'create', 'root', '--role', 'owner', '--password-stdin'], { DATABASE_URL: `sqlite:${missing}` }, PASSWORD))).toContain(missing);
    expect(existsSync(missing)).toBe(false);
    const url = await database();
    // In the command's terms, not the HTTP API's ("Invalid request: body.password …"): issue 29, item 6.
    expect(oneLineFailure(await cli(['operators', 'create', 'root', '--role', 'owner', '--password-stdin'], { DATABASE_URL: url }, 'short\n'))).toBe(
      'tollgate: the password must be at least 12 characters long; nothing was created',
    );
    const badRole = await cli(['operators', 'create', 'root', '--role', 'god', '--password-stdin'], { DATABASE_URL: url }, PASSWORD);
    expect(badRole.code).toBe(2);
    expect(badRole.stderr).toMatch(/--role must be one of owner, admin, support, viewer/);
    expect(oneLineFailure(await cli(['operators', 'create', 'root', '--role', 'owner'], { DATABASE_URL: url }))).toMatch(/--password-stdin/);
    expect(oneLineFailure(await cli(['operators', 'create', 'root', '--role', 'owner', '--password-stdin'], { DATABASE_URL: url }, ''))).toMatch(/empty/);
    const listed = await cli(['--json', 'operators', 'list'], { DATABASE_URL: url });
    expect(JSON.parse(listed.stdout)).toEqual([]);
  });
});
