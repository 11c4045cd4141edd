import { createPrivateKey } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import type { InjectOptions } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/index.js';
import { createTollgate, type Tollgate } from '../src/wiring.js';
import { ADMIN_TOKEN, fastHasher, STORE, TestClock, type Harness, type TestApp } from './helpers.js';
import { rotateKey, setUpKeys } from './signing-fixtures.js';

const METRICS_TOKEN = 'metrics-token-0123456789abcdef';

/**
 * The server's signing private keys sign answers and nothing else shows them:
 * not an admin answer, not the audit log, not the logs at trace level, not the
 * metrics. Every place is searched for each key in every encoding it could
 * take (the stored base64 DER, the raw seed as base64, base64url and hex).
 * SQLite only: the log stream does not depend on the store.
 */
describe.skipIf(STORE !== 'sqlite')('signing private keys never leave the signer', () => {
  let t: Tollgate | undefined;
  let dir: string | undefined;
  afterEach(async () => {
    await t?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('in no admin answer, audit entry, log line (trace) or metric', async () => {
    dir = mkdtempSync(join(tmpdir(), 'tollgate-keys-secrets-'));
    const stream = new PassThrough();
    const lines: string[] = [];
    stream.on('data', (d: Buffer) => lines.push(d.toString()));
    const clock = new TestClock();
    const config = loadConfig({ DATABASE_URL: `sqlite:${join(dir, 'db.sqlite')}`, TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN, LOG_LEVEL: 'trace', RATE_LIMIT: 'off', METRICS_TOKEN });
    const tollgate = (t = await createTollgate(config, { clock: clock.now, hasher: fastHasher, logStream: stream }));
    const answers: string[] = [];
    const inject = async (opts: InjectOptions) => {
      const res = await tollgate.server.inject(opts);
      answers.push(res.body);
      return res;
    };
    // Just what the fixtures use of a harness, over this logged server.
    const h = {
      clock,
      admin: (method: string, url: string, payload?: unknown) =>
        inject({ method: method as 'GET', url: `/admin/v1${url}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, ...(payload !== undefined && { payload: payload as object }) }),
    } as unknown as Harness;

    const created = (await h.admin('POST', '/apps', { name: 'Secret keys' })).json();
    const app: TestApp = { id: created.id, name: created.name, apiKey: created.api_key, apiSecret: created.api_secret, headers: { 'x-api-key': created.api_key, 'x-api-secret': created.api_secret } };
    const { rootPrivateKey, kid } = await setUpKeys(h, app);
    const second = await rotateKey(h, app, rootPrivateKey);
    const pending = (await h.admin('POST', `/apps/${app.id}/signing-keys`)).json().kid as string;
    // Every private key, read before retirement deletes the first one's.
    const stored = await tollgate.services.store.db.all<{ private_key: string }>('SELECT private_key FROM signing_keys WHERE private_key IS NOT NULL');
    expect(stored).toHaveLength(3);

    await h.admin('GET', `/apps/${app.id}/signing-keys`);
    for (const k of [kid, second, pending]) await h.admin('GET', `/apps/${app.id}/signing-keys/${k}`);
    await h.admin('POST', `/apps/${app.id}/signing-keys/${kid}/retire`);
    expect((await h.admin('PATCH', `/apps/${app.id}`, { signatures: 'required' })).statusCode).toBe(200);
    await h.admin('GET', `/apps/${app.id}`);
    await h.admin('GET', `/audit?app_id=${app.id}&limit=500`);
    await inject({ method: 'GET', url: '/signing_keys', headers: app.headers });
    await inject({ method: 'GET', url: '/signing_keys', headers: { ...app.headers, 'tollgate-nonce': 'n0nce-0123456789abcdef' } });
    expect((await inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).statusCode).toBe(200);
    await new Promise((r) => setImmediate(r));

    const needles = stored.flatMap(({ private_key }) => {
      const der = Buffer.from(private_key, 'base64');
      const seed = der.subarray(der.length - 32);
      expect(createPrivateKey({ key: der, format: 'der', type: 'pkcs8' }).export({ format: 'jwk' }).d).toBe(seed.toString('base64url'));
      return [private_key, seed.toString('base64'), seed.toString('base64url'), seed.toString('hex')];
    });
    const log = lines.join('');
    expect(log).toContain('/signing-keys'); // trace level logged these requests
    expect(answers.join('\n')).toContain(second); // the answers are the ones about these keys
    for (const needle of needles) {
      expect(log).not.toContain(needle);
      for (const answer of answers) expect(answer).not.toContain(needle);
    }
  });
});
