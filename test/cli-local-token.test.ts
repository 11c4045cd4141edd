import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { digest } from '../src/domain/tokens.js';
import { openDb } from '../src/store/open.js';
import { STORE } from './helpers.js';
import { inScratchSchema, makeDatabase, oneLineFailure, run, tempDir } from './cli-process.js';

/**
 * `tollgate tokens create NAME --local` on each store (the lost-token
 * recovery of README): the token lands in the database as its digest, with
 * an audit record of who made it on the machine; a database that is not
 * Tollgate's is refused. The CLI is a process of its own on the store of the
 * project that runs this file.
 */

const TOKEN = /export TOLLGATE_ADMIN_TOKEN=(tg_adm_\S+)/;

async function storedToken(url: string, token: string): Promise<{ name: string; actor: string } | undefined> {
  const db = await openDb(url);
  try {
    const row = await db.one<{ name: string }>('SELECT name FROM admin_tokens WHERE token_hash = ? AND revoked_at IS NULL', [digest(token)]);
    if (!row) return undefined;
    const audit = await db.one<{ actor: string }>("SELECT actor FROM audit_log WHERE action = 'admin_token.create' ORDER BY at DESC LIMIT 1");
    return { name: row.name, actor: audit?.actor ?? '' };
  } finally {
    await db.close();
  }
}

describe.skipIf(STORE !== 'sqlite')('tokens create --local on SQLite (SQLite project only)', () => {
  it('writes a live token into an existing database; refuses a file that is not a Tollgate database', async () => {
    const dir = tempDir();
    const path = join(dir, 'tollgate.db');
    await makeDatabase(path);
    const r = await run(['tokens', 'create', 'rescue', '--local'], dir, { DATABASE_URL: `sqlite:${path}` });
    expect(r.code, r.stderr).toBe(0);
    const token = TOKEN.exec(r.stdout)?.[1];
    expect(token, r.stdout).toBeDefined();
    expect(await storedToken(`sqlite:${path}`, token!)).toMatchObject({ name: 'rescue', actor: expect.stringMatching(/^local:/) });

    const other = join(dir, 'other.db');
    const db = await openDb(`sqlite:${other}`);
    await db.close();
    expect(oneLineFailure(await run(['tokens', 'create', 'rescue', '--database-url', `sqlite:${other}`], dir))).toMatch(/is not a Tollgate database/);
  });
});

describe.skipIf(STORE !== 'postgres')('tokens create --local on PostgreSQL (PostgreSQL project only)', () => {
  it('writes a live token into the database; refuses an empty schema', async () => {
    await inScratchSchema('localtoken', async (_admin, url) => {
      expect(oneLineFailure(await run(['tokens', 'create', 'rescue', '--local'], tempDir(), { DATABASE_URL: url.toString() }))).toMatch(/is not a Tollgate database/);
      const migrated = await run(['migrate', '--create', '--database-url', url.toString()], tempDir());
      expect(migrated.code, migrated.stderr).toBe(0);
      const r = await run(['tokens', 'create', 'rescue', '--local'], tempDir(), { DATABASE_URL: url.toString() });
      expect(r.code, r.stderr).toBe(0);
      const token = TOKEN.exec(r.stdout)?.[1];
      expect(token, r.stdout).toBeDefined();
      expect(await storedToken(url.toString(), token!)).toMatchObject({ name: 'rescue', actor: expect.stringMatching(/^local:/) });
    });
  });
});
