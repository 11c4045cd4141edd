import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from '../../src/store/sqlite-driver.js';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { ADMIN_TOKEN, admin, startNode, stopNode, within, type Node } from './nodes.js';

/**
 * Uploads stream their content into blob chunks before the unit of work that
 * writes the file row (src/domain/files.ts): kill -9 in the middle of a large
 * upload leaves a blob nothing references. The sweeper spares it while it is
 * younger than the grace (24 h), removes it once older, and leaves every
 * stored file's content alone. On SQLite and on PostgreSQL.
 */
const pgUrl = inject('pgUrl');
const dir = mkdtempSync(join(tmpdir(), 'tollgate-upload-crash-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const DAY_MS = 24 * 3600 * 1000;

/** The statements the test runs on the database while the server is down or up. */
interface Sql {
  all(sql: string): Promise<Record<string, unknown>[]>;
  run(sql: string): Promise<void>;
  close(): Promise<void>;
}

async function pgStore(): Promise<{ url: string; sql: Sql }> {
  const schema = `u_${randomBytes(5).toString('hex')}`;
  const client = new pg.Client({ connectionString: pgUrl! });
  await client.connect();
  await client.query(`CREATE SCHEMA ${schema}`);
  await client.query(`SET search_path = ${schema}`);
  const url = new URL(pgUrl!);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return {
    url: url.toString(),
    sql: {
      all: async (q) => (await client.query(q)).rows,
      run: async (q) => void (await client.query(q)),
      close: () => client.end(),
    },
  };
}

async function sqliteStore(): Promise<{ url: string; sql: Sql }> {
  const path = join(dir, `crash-${randomBytes(4).toString('hex')}.db`);
  const open = () => new Database(path);
  return {
    url: `sqlite:${path}`,
    sql: {
      all: async (q) => {
        const db = open();
        try {
          return db.prepare(q).all() as Record<string, unknown>[];
        } finally {
          db.close();
        }
      },
      run: async (q) => {
        const db = open();
        try {
          db.prepare(q).run();
        } finally {
          db.close();
        }
      },
      close: async () => undefined,
    },
  };
}

const stores = [
  { name: 'SQLite', open: sqliteStore, skip: false },
  { name: 'PostgreSQL', open: pgStore, skip: !pgUrl },
];

const ORPHANS = 'SELECT id FROM blobs WHERE NOT EXISTS (SELECT 1 FROM files WHERE files.blob_id = blobs.id)';

async function upload(node: Node, appId: string, name: string, content: Buffer): Promise<{ id: string; sha256: string }> {
  const res = await fetch(`${node.url}/admin/v1/apps/${appId}/files?name=${name}`, {
    method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/octet-stream' }, body: new Uint8Array(content),
  });
  expect(res.status, await res.clone().text()).toBe(201);
  return res.json() as Promise<{ id: string; sha256: string }>;
}

/** A large upload that sends its first megabytes and then waits: the process is killed before it ends. */
function hangingUpload(node: Node, appId: string): { sent: Promise<void>; ended: Promise<void> } {
  const url = new URL(`${node.url}/admin/v1/apps/${appId}/files?name=big.bin`);
  const req = request(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/octet-stream', 'content-length': String(64 * 1024 * 1024) },
  });
  const ended = new Promise<void>((done) => {
    req.on('error', () => done()); // the server died under it
    req.on('response', () => done());
  });
  const sent = new Promise<void>((done) => req.write(randomBytes(3 * 1024 * 1024), () => done()));
  return { sent, ended };
}

/** The content of a stored file, from its chunks, hashed. */
async function storedSha(sql: Sql, fileId: string): Promise<string> {
  const chunks = await sql.all(`SELECT c.data FROM blob_chunks c JOIN files f ON f.blob_id = c.blob_id WHERE f.id = '${fileId}' ORDER BY c.seq`);
  const hash = createHash('sha256');
  for (const c of chunks) hash.update(c.data as Buffer);
  return hash.digest('hex');
}

describe.each(stores)('an upload killed mid-way, on $name', ({ open, skip }) => {
  it.skipIf(skip)('leaves an orphaned blob that the sweeper spares within the grace and removes after it; stored files keep their content', async () => {
    const { url, sql } = await open();
    let node: Node = await startNode(url);
    try {
      const app = await admin(node.url, 'POST', '/apps', { name: 'Uploads' });
      expect(app.status).toBe(201);
      const kept = await upload(node, app.body.id, 'kept.bin', randomBytes(700 * 1024));
      expect(await storedSha(sql, kept.id)).toBe(kept.sha256);

      const big = hangingUpload(node, app.body.id);
      await big.sent;
      // The content is being streamed into a blob that no file row references yet.
      const streamed = async () => Number((await sql.all(`SELECT COUNT(*) AS n FROM blob_chunks WHERE blob_id IN (${ORPHANS})`))[0]!.n);
      await within(10_000, async () => (await streamed()) >= 4); // a megabyte in 256 KiB chunks
      await stopNode(node, 'SIGKILL');
      await big.ended;
      const orphans = (await sql.all(ORPHANS)).map((r) => r.id as string);
      expect(orphans).toHaveLength(1);

      // Within the grace (it could be a live upload on another node): spared at start.
      node = await startNode(url, { LOG_LEVEL: 'debug' });
      await within(10_000, async () => node.output.join('').includes('"event":"orphan_blob_sweep"'));
      expect((await sql.all(ORPHANS)).map((r) => r.id)).toEqual(orphans);
      await stopNode(node, 'SIGKILL');

      // A day later: removed at start, with its chunks.
      await sql.run(`UPDATE blobs SET created_at = created_at - ${DAY_MS + 60_000} WHERE id = '${orphans[0]}'`);
      node = await startNode(url);
      await within(10_000, async () => (await sql.all(ORPHANS)).length === 0);
      expect(Number((await sql.all(`SELECT COUNT(*) AS n FROM blob_chunks WHERE blob_id = '${orphans[0]}'`))[0]!.n)).toBe(0);

      // The stored file is untouched: its row, its chunks, its answer.
      expect(await storedSha(sql, kept.id)).toBe(kept.sha256);
      const file = await admin(node.url, 'GET', `/apps/${app.body.id}/files/${kept.id}`);
      expect(file.status).toBe(200);
      expect(file.body).toMatchObject({ id: kept.id, sha256: kept.sha256, size: 700 * 1024 });
    } finally {
      await stopNode(node);
      await sql.close();
    }
  });
});
