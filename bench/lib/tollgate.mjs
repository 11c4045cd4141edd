// Setting up a Tollgate instance for the benchmark: the admin API for the app,
// its variables, files and license codes; the database directly (the built
// project's own openDb) for the bulk of users, which HTTP could never seed
// fast enough at a million.
import { generateKeyPairSync, randomUUID, sign } from 'node:crypto';
import { createReadStream, statSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { pathToFileURL } from 'node:url';

export const PASSWORD = 'correct horse battery staple';
export const USER_PREFIX = 'bench_';

export function tollgateClient(baseUrl, adminToken) {
  async function call(method, path, { body, headers = {}, raw = false, expect } = {}) {
    const res = await fetch(baseUrl + path, {
      method,
      headers: { ...headers, ...(body !== undefined && { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(120_000),
    });
    const text = await res.text();
    if (expect !== undefined ? res.status !== expect : !res.ok) {
      throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 500)}`);
    }
    return raw ? { status: res.status, text, bytes: Buffer.byteLength(text) } : text ? JSON.parse(text) : null;
  }
  const admin = { authorization: `Bearer ${adminToken}` };
  /** Streams a file as the raw body of an admin POST (a 100 MiB upload never sits in the harness's memory). */
  async function upload(path, file) {
    const res = await new Promise((resolve, reject) => {
      const req = request(baseUrl + '/admin/v1' + path, {
        method: 'POST',
        headers: { ...admin, 'content-type': 'application/octet-stream', 'content-length': statSync(file).size },
        timeout: 120_000,
      }, resolve);
      req.on('error', reject);
      req.on('timeout', () => req.destroy(new Error(`upload ${path} timed out`)));
      pipeline(createReadStream(file), req).catch(reject);
    });
    let text = '';
    for await (const chunk of res) text += chunk;
    if (res.statusCode < 200 || res.statusCode > 299) throw new Error(`POST ${path}: ${res.statusCode} ${text.slice(0, 500)}`);
    return JSON.parse(text);
  }
  return {
    call,
    upload,
    admin: (method, path, opts = {}) => call(method, `/admin/v1${path}`, { ...opts, headers: { ...admin, ...opts.headers } }),
  };
}

/** An app like a real one: a handful of variables and the two files the download scenarios fetch. */
export async function setUpApp(client, files) {
  const app = await client.admin('POST', '/apps', { body: { name: 'Bench App' } });
  const appHeaders = { 'x-api-key': app.api_key, 'x-api-secret': app.api_secret };
  const variables = { latest_version: '2.4.1', update_url: 'https://example.com/downloads/app-2.4.1.zip', motd: 'Welcome back!', feature_flags: 'sync,export,beta-ui', min_version: '2.0.0' };
  for (const [name, value] of Object.entries(variables)) {
    await client.admin('PUT', `/apps/${app.id}/variables/${name}`, { body: { value } });
  }
  const fileIds = {};
  for (const [key, { path, name }] of Object.entries(files)) {
    const f = await client.upload(`/apps/${app.id}/files?name=${encodeURIComponent(name)}&mime_type=application/octet-stream`, path);
    fileIds[key] = f.id;
  }
  return { id: app.id, appHeaders, fileIds };
}

/**
 * Gives the app a root key and one certified signing key, as `tollgate keys init` does (the root's private
 * half stays here and is dropped), so the signed scenario measures real Ed25519 signing. The certificate's
 * bytes come from the built project's own format functions.
 */
export async function setUpSigningKey(dist, client, appId) {
  const { b64url, certificateInput, encodeCertificate } = await import(pathToFileURL(join(dist, 'domain', 'signing', 'format.js')).href);
  const root = generateKeyPairSync('ed25519');
  await client.admin('PUT', `/apps/${appId}/root-key`, { body: { public_key: root.publicKey.export({ format: 'jwk' }).x } });
  const { kid, public_key } = await client.admin('POST', `/apps/${appId}/signing-keys`, { expect: 201 });
  const now = Date.now();
  const fields = { app_id: appId, kid, public_key, not_before: now - 60_000, not_after: now + 30 * 24 * 3600 * 1000 };
  const certificate = encodeCertificate({ v: 1, ...fields, sig: b64url(sign(null, certificateInput(fields), root.privateKey)) });
  await client.admin('PUT', `/apps/${appId}/signing-keys/${kid}/certificate`, { body: { certificate } });
  return kid;
}

/** Creates `count` unused license codes (in batches of at most 10,000, the API's limit). */
export async function createCodes(client, appId, count, minutes = 43_200) {
  const codes = [];
  while (codes.length < count) {
    const n = Math.min(10_000, count - codes.length);
    const out = await client.admin('POST', `/apps/${appId}/licenses`, { body: { count: n, minutes }, expect: 201 });
    for (const l of out.licenses) codes.push(l.code);
  }
  return codes;
}

/**
 * Seeds `count` users named bench_0… with ONE precomputed argon2id hash (the
 * production parameters) and a membership active for a year, in one
 * transaction of multi-row INSERTs through the project's own query layer
 * (<dist>/store/open.js), so SQLite and PostgreSQL take the same path.
 * The caller should flush the written pages to disk before measuring (see settleDisk in run.mjs).
 */
export async function seedUsers(dist, databaseUrl, appId, count, passwordHash, onProgress, note) {
  const { openDb } = await import(pathToFileURL(join(dist, 'store', 'open.js')).href);
  const db = await openDb(databaseUrl, { pgPoolSize: 1, pgStatementTimeoutMs: 0 });
  const now = Date.now();
  const activeUntil = now + 365 * 24 * 3600 * 1000;
  const ROWS = 500;
  const row = '(?, ?, ?, ?, ?, NULL, 0, ?, 0, ?, ?)';
  const fullSql = `INSERT INTO users (id, app_id, username, username_key, password_hash, signup_license_id, is_lifetime, active_until, device_count, created_at, updated_at) VALUES ${Array(ROWS).fill(row).join(', ')}`;
  try {
    await db.transaction(async (tx) => {
      for (let start = 0; start < count; start += ROWS) {
        const n = Math.min(ROWS, count - start);
        const params = [];
        for (let i = start; i < start + n; i++) {
          const name = USER_PREFIX + i;
          // created_at increases with i, so admin listings keep the seed order.
          params.push(randomUUID(), appId, name, name, passwordHash, activeUntil, now - count + i, now - count + i);
        }
        const sql = n === ROWS ? fullSql : fullSql.slice(0, fullSql.indexOf('VALUES ') + 7) + Array(n).fill(row).join(', ');
        await tx.run(sql, params);
        if (onProgress && (start + n) % 100_000 === 0 && start + n < count) onProgress(start + n);
      }
    });
    // Move the seed from the write-ahead log into the database now, not in the first write of a
    // measured scenario (SQLite's automatic checkpoint; PostgreSQL's checkpointer, if allowed).
    if (db.dialect === 'sqlite') {
      const r = await db.one('PRAGMA wal_checkpoint(TRUNCATE)');
      if (r && Number(r.busy) !== 0) note?.(`seed checkpoint incomplete (busy; ${r.checkpointed}/${r.log} pages): the server will finish it`);
    } else {
      await db.script('CHECKPOINT').catch((err) => note?.(`CHECKPOINT refused (${err.message}): PostgreSQL's checkpointer will write the seed later`));
    }
  } finally {
    await db.close();
  }
}
