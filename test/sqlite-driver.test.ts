import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import Database, { sqliteDriver } from '../src/store/sqlite-driver.js';
import { harness, STORE, type Harness } from './helpers.js';

const run = promisify(execFile);
const require = createRequire(import.meta.url);
const nodeMajor = Number(process.versions.node.split('.')[0]);
// better-sqlite3 12 aborts on Node 24; 13 segfaults on Node 20.
const expected = nodeMajor >= 22 ? { package: 'better-sqlite3', major: 13 } : { package: 'better-sqlite3-node20', major: 12 };

describe(`the SQLite driver on Node ${process.versions.node}`, () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it(`is better-sqlite3 ${expected.major}, from ${expected.package}`, () => {
    expect(sqliteDriver.package).toBe(expected.package);
    expect(Number(sqliteDriver.version.split('.')[0])).toBe(expected.major);
    const installed = require(`${expected.package}/package.json`) as { name: string; version: string };
    expect(installed).toMatchObject({ name: 'better-sqlite3', version: sqliteDriver.version });
    expect(Database).toBe(require(expected.package));
    expect(dirname(require.resolve(`${expected.package}/package.json`))).toMatch(new RegExp(`node_modules/${expected.package}$`));
  });

  it('runs SQL', () => {
    const db = new Database(':memory:');
    try {
      const row = db.prepare('select sqlite_version() as v').get() as { v: string };
      expect(row.v).toMatch(/^3\.\d+\.\d+$/);
    } finally {
      db.close();
    }
  });

  // What better-sqlite3 12 does on Node 24 (12.11.1 on 24.21.0, measured): statements prepared in timer
  // callbacks and freed by a GC that runs outside JavaScript abort the process within 0.2 s with
  // `Assertion failed: (env) != nullptr` from Statement::~Statement. A separate process, since an abort
  // would take the test runner with it.
  it('survives statements freed by the GC between callbacks', async () => {
    const script = `
      const Database = require(${JSON.stringify(require.resolve(sqliteDriver.package))});
      const db = new Database(':memory:');
      let n = 0;
      const churn = setInterval(() => { for (let i = 0; i < 2000; i++) db.prepare('select ' + n++ + ' + ? as v').get(1); }, 10);
      setTimeout(() => { clearInterval(churn); db.close(); console.log(n); }, 1000);
    `;
    const { stdout } = await run(process.execPath, ['-e', script], { cwd: join(import.meta.dirname, '..') });
    expect(Number(stdout.trim())).toBeGreaterThan(2000);
  });

  it.skipIf(STORE !== 'sqlite')('serves the client API on it (SQLite store only)', async () => {
    h = await harness();
    const app = await h.createApp();
    await h.activeUser(app, 'alice');
    const token = await h.login(app, 'alice');
    const res = await h.client(app, 'GET', '/app_context', undefined, { authorization: `Bearer ${token}` });
    expect(res.statusCode).toBe(200);
    expect(res.json().user.username).toBe('alice');
  });
});
