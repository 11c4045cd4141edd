import { createCipheriv, createPrivateKey, createPublicKey, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { InjectOptions } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config/index.js';
import { SEALED_KEY_DETAIL } from '../src/domain/lease.js';
import { resealKeys } from '../src/domain/signing/reseal.js';
import { KeySeal, kek } from '../src/domain/signing/seal.js';
import { UNSEALED_WARNING } from '../src/http/routes/meta.js';
import { createTollgate, type Tollgate } from '../src/wiring.js';
import { ADMIN_TOKEN, fastHasher, harness, PASSWORD, type Harness, type TestApp, writableStore } from './helpers.js';
import { leaseApp, leaseOf, nonce } from './lease-fixtures.js';
import { captureLog, type LogCapture } from './log-capture.js';
import { setUpKeys } from './signing-fixtures.js';

/**
 * Issue 28 item 3: signing private keys sealed at rest under a key-encryption
 * key the nodes are given (SIGNING_KEY_SEAL), never stored in the database.
 * A second node on the same database plays the restored backup and the
 * rotation's nodes.
 */
const K1 = randomBytes(32).toString('base64');
const K2 = randomBytes(32).toString('hex');
// Every Ed25519 PKCS#8 DER starts with these bytes (RFC 8410): the row must not hold them in any encoding.
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

let h: Harness | undefined;
const nodes: Tollgate[] = [];
afterEach(async () => {
  for (const t of nodes.splice(0)) await t.close();
  await h?.close();
  h = undefined;
});

async function node(env: Record<string, string>, log?: LogCapture): Promise<Tollgate> {
  const config = loadConfig({ DATABASE_URL: h!.databaseUrl, TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN, LOG_LEVEL: log ? 'info' : 'silent', RATE_LIMIT: 'off', ...env });
  const t = await createTollgate(config, { clock: h!.clock.now, hasher: fastHasher, reuseCompiledSchemas: true, ...(log && { logStream: log.stream }) });
  nodes.push(t);
  await t.server.ready();
  return t;
}

/** An app with leases, a certified key and an active user "alice". */
async function signingApp(): Promise<{ app: TestApp; rootPublicKey: string; kid: string }> {
  const app = await leaseApp(h!);
  const { rootPublicKey, kid } = await setUpKeys(h!, app);
  await h!.activeUser(app, 'alice');
  return { app, rootPublicKey, kid };
}

function lease(inject: (o: InjectOptions) => Promise<{ statusCode: number; body: string; json(): unknown }>, app: TestApp) {
  return inject({
    method: 'POST', url: '/lease',
    headers: { ...app.headers, 'tollgate-nonce': nonce(), 'x-hardware-id': 'hw-1', 'x-api-username': 'alice', 'x-api-password': PASSWORD },
  });
}

const storedKeys = () => h!.tollgate.services.store.signingKeys.privateKeys();

function holdsPkcs8(stored: string): boolean {
  const decodings = [Buffer.from(stored, 'base64'), ...stored.split('.').map((p) => Buffer.from(p, 'base64url'))];
  return stored.includes('MC4CAQAwBQYDK2Vw') || decodings.some((b) => b.includes(PKCS8_PREFIX));
}

describe('signing keys sealed under SIGNING_KEY_SEAL', () => {
  it('the row holds no PKCS#8, only the sealed form; the node signs leases and answers with it; /readyz says "on"', async () => {
    h = await harness({ env: { SIGNING_KEY_SEAL: K1 } });
    const { app, rootPublicKey, kid } = await signingApp();
    const [row] = await storedKeys();
    expect(row!.kid).toBe(kid);
    expect(row!.privateKey).toMatch(new RegExp(`^seal1\\.${kek(Buffer.from(K1, 'base64')).id}\\.`));
    expect(holdsPkcs8(row!.privateKey)).toBe(false);
    // It is the key: opened with the KEK, its public half is the one the server published.
    const der = new KeySeal(kek(Buffer.from(K1, 'base64'))).open(app.id, kid, row!.privateKey);
    const key = (await h.admin('GET', `/apps/${app.id}/signing-keys/${kid}`)).json();
    expect(createPublicKey(createPrivateKey({ key: der, format: 'der', type: 'pkcs8' })).export({ format: 'jwk' }).x).toBe(key.public_key);

    const res = await lease(h.inject, app);
    expect(res.statusCode, res.body).toBe(200);
    expect(leaseOf(res as never, rootPublicKey).payload.user_id).toBeTruthy();
    const signed = await h.inject({ method: 'GET', url: '/app_context', headers: { ...app.headers, 'tollgate-nonce': nonce() } });
    expect(signed.headers['tollgate-signature']).toMatch(new RegExp(`kid=${kid}`));

    expect((await h.inject({ method: 'GET', url: '/readyz' })).json()).toMatchObject({ status: 'ok', signing_key_seal: 'on' });
    expect((await h.inject({ method: 'GET', url: '/readyz' })).json().warnings).toBeUndefined();
  });

  it('a sealed key moved to another kid or app does not open (the kid and app are bound to it)', () => {
    const seal = new KeySeal(kek(randomBytes(32)));
    const sealed = seal.seal('app-1', 'kid-1', randomBytes(48).toString('base64'));
    expect(() => seal.open('app-1', 'kid-2', sealed)).toThrow(/does not open/);
    expect(() => seal.open('app-2', 'kid-1', sealed)).toThrow(/does not open/);
  });

  it('a sealed value shorter than a full tag (a 4-byte GCM tag over nothing, which GCM accepts unless told the length) or with a cut IV does not open', () => {
    const k = kek(randomBytes(32));
    const seal = new KeySeal(k);
    const [prefix, id] = seal.seal('app-1', 'kid-1', randomBytes(48).toString('base64')).split('.');
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', k.key, iv, { authTagLength: 4 });
    cipher.setAAD(Buffer.from('tollgate/signing-key/seal1\0app-1\0kid-1'));
    const body = Buffer.concat([cipher.update(Buffer.alloc(0)), cipher.final(), cipher.getAuthTag()]);
    expect(body.length).toBe(4);
    expect(() => seal.open('app-1', 'kid-1', `${prefix}.${id}.${iv.toString('base64url')}.${body.toString('base64url')}`)).toThrow(/does not open/);
    expect(() => seal.open('app-1', 'kid-1', `${prefix}.${id}.${iv.subarray(0, 8).toString('base64url')}.${body.toString('base64url')}`)).toThrow(/does not open/);
  });

  it('a backup restored without the key cannot sign: leases 503 saying why, answers unsigned, an error line names the cause; never a 500', async () => {
    h = await harness({ env: { SIGNING_KEY_SEAL: K1 } });
    const { app, kid } = await signingApp();
    for (const [env, cause] of [
      [{}, /is sealed \(key-encryption key [0-9a-f]{16}\), but SIGNING_KEY_SEAL is not set/],
      [{ SIGNING_KEY_SEAL: K2 }, /is sealed under key-encryption key [0-9a-f]{16}, which this node was not given/],
    ] as const) {
      const log = captureLog();
      const restored = await node(env, log);
      const inject = (o: InjectOptions) => restored.server.inject(o);
      const res = await lease(inject, app);
      expect(res.statusCode, res.body).toBe(503);
      expect(res.json()).toEqual({ detail: SEALED_KEY_DETAIL, code: 'service_unavailable' });
      const answer = await inject({ method: 'GET', url: '/app_context', headers: { ...app.headers, 'tollgate-nonce': nonce(), 'x-api-username': 'alice', 'x-api-password': PASSWORD } });
      expect(answer.statusCode).toBe(200);
      expect(answer.headers['tollgate-signature']).toBeUndefined();
      const lines = log.lines.filter((l) => l.event === 'signing_key_sealed');
      expect(lines.length).toBeGreaterThan(0);
      expect(lines[0]!.level).toBe(50);
      expect(lines[0]).toMatchObject({ appId: app.id, kid });
      expect(String(lines[0]!.cause)).toMatch(cause);
      expect(String(lines[0]!.cause)).toContain(kid);
    }
  });

  it('rotation: with the new key and the old one both keys open; reseal-keys moves every key to the new one; then the new key alone signs', async () => {
    h = await harness({ env: { SIGNING_KEY_SEAL: K1 } });
    const { app, rootPublicKey } = await signingApp();
    const rotating = await node({ SIGNING_KEY_SEAL: K2, SIGNING_KEY_SEAL_OLD: K1 });
    expect(rotating.services.seal.mode).toBe('rotating');
    expect((await lease((o) => rotating.server.inject(o), app)).statusCode).toBe(200);
    expect((await rotating.server.inject({ method: 'GET', url: '/readyz' })).json()).toMatchObject({ signing_key_seal: 'rotating' });

    const { resealed, unopenable } = await resealKeys(writableStore(rotating.services), rotating.services.seal);
    expect(resealed).toHaveLength(1);
    expect(unopenable).toEqual([]);
    const newId = kek(Buffer.from(K2, 'hex')).id;
    for (const k of await storedKeys()) expect(k.privateKey.startsWith(`seal1.${newId}.`)).toBe(true);
    // Run again: nothing left to do.
    expect((await resealKeys(writableStore(rotating.services), rotating.services.seal)).resealed).toEqual([]);

    const after = await node({ SIGNING_KEY_SEAL: K2 });
    const res = await lease((o) => after.server.inject(o), app);
    expect(res.statusCode, res.body).toBe(200);
    expect(leaseOf(res as never, rootPublicKey).payload.app_id).toBe(app.id);
    // The old key alone no longer opens it.
    expect((await lease((o) => node({ SIGNING_KEY_SEAL: K1 }).then((t) => t.server.inject(o)), app)).statusCode).toBe(503);
  });
});

describe('without SIGNING_KEY_SEAL (existing deployments)', () => {
  it('warns at start and in /readyz, stores keys plain and signs; given a key later, plain keys still sign and reseal-keys seals them', async () => {
    const log = captureLog();
    h = await harness({ env: { LOG_LEVEL: 'warn' }, logStream: log.stream });
    expect(log.lines.find((l) => l.event === 'signing_keys_unsealed')).toMatchObject({ level: 40 });
    expect((await h.inject({ method: 'GET', url: '/readyz' })).json()).toMatchObject({ status: 'ok', signing_key_seal: 'off', warnings: [UNSEALED_WARNING] });
    const { app } = await signingApp();
    const [row] = await storedKeys();
    expect(row!.privateKey.startsWith('seal1.')).toBe(false);
    expect(holdsPkcs8(row!.privateKey)).toBe(true);
    expect((await lease(h.inject, app)).statusCode).toBe(200);

    const sealedLog = captureLog();
    const sealed = await node({ SIGNING_KEY_SEAL: K1 }, sealedLog);
    expect(sealedLog.lines.find((l) => l.event === 'signing_keys_to_reseal')).toMatchObject({ level: 40, plain: 1 });
    expect((await lease((o) => sealed.server.inject(o), app)).statusCode).toBe(200);
    expect((await resealKeys(writableStore(sealed.services), sealed.services.seal)).resealed).toEqual([row!.kid]);
    const [after] = await storedKeys();
    expect(holdsPkcs8(after!.privateKey)).toBe(false);
    expect((await lease((o) => sealed.server.inject(o), app)).statusCode).toBe(200);
  });
});

describe('the sealing settings', () => {
  const base = { DATABASE_URL: 'sqlite::memory:' };
  it('read from the environment or a file; a bad or contradictory value names the setting', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-seal-'));
    try {
      const file = join(dir, 'kek');
      writeFileSync(file, `${K1}\n`);
      expect(loadConfig({ ...base, SIGNING_KEY_SEAL_FILE: file }).signingKeySealFile).toEqual(Buffer.from(K1, 'base64'));
      expect(loadConfig({ ...base, SIGNING_KEY_SEAL: K2 }).signingKeySeal).toEqual(Buffer.from(K2, 'hex'));
      const bad: [Record<string, string>, string][] = [
        [{ SIGNING_KEY_SEAL: 'short' }, 'SIGNING_KEY_SEAL'],
        [{ SIGNING_KEY_SEAL: randomBytes(16).toString('base64') }, 'SIGNING_KEY_SEAL'],
        [{ SIGNING_KEY_SEAL_FILE: join(dir, 'missing') }, 'SIGNING_KEY_SEAL_FILE'],
        [{ SIGNING_KEY_SEAL: K1, SIGNING_KEY_SEAL_FILE: file }, 'SIGNING_KEY_SEAL_FILE'],
        [{ SIGNING_KEY_SEAL_OLD: K1 }, 'SIGNING_KEY_SEAL_OLD'],
        [{ SIGNING_KEY_SEAL: K1, SIGNING_KEY_SEAL_OLD_FILE: file }, 'SIGNING_KEY_SEAL_OLD_FILE'],
      ];
      for (const [env, setting] of bad) {
        let err: unknown;
        try {
          loadConfig({ ...base, ...env });
        } catch (e) {
          err = e;
        }
        expect(err, JSON.stringify(env)).toBeInstanceOf(ConfigError);
        expect((err as ConfigError).setting).toBe(setting);
        expect((err as Error).message).not.toContain(K1);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
