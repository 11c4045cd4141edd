import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { kek } from '../src/domain/signing/seal.js';
import { harness, type Harness } from './helpers.js';
import { oneLineFailure, run, tempDir } from './cli-process.js';
import { leaseApp } from './lease-fixtures.js';
import { setUpKeys } from './signing-fixtures.js';

/** `tollgate reseal-keys` as an operator runs it, on the database of a harness that made a key without a seal. */
const K1 = randomBytes(32).toString('base64');
const K2 = randomBytes(32).toString('base64');

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('tollgate reseal-keys', () => {
  it('seals plain keys under SIGNING_KEY_SEAL; refuses without one; names the cause for a key it cannot open', async () => {
    h = await harness();
    const app = await leaseApp(h);
    await setUpKeys(h, app);
    const cwd = tempDir();
    const stored = async () => (await h!.tollgate.services.store.signingKeys.privateKeys()).map((k) => k.privateKey);

    const none = oneLineFailure(await run(['reseal-keys'], cwd, { DATABASE_URL: h.databaseUrl }));
    expect(none).toMatch(/SIGNING_KEY_SEAL \(or SIGNING_KEY_SEAL_FILE\) is not set/);

    const sealed = await run(['reseal-keys'], cwd, { DATABASE_URL: h.databaseUrl, SIGNING_KEY_SEAL: K1 });
    expect(sealed.code, sealed.stderr).toBe(0);
    const id1 = kek(Buffer.from(K1, 'base64')).id;
    expect(sealed.stdout).toContain(`resealed 1 signing key under key-encryption key ${id1}`);
    expect((await stored()).every((v) => v.startsWith(`seal1.${id1}.`))).toBe(true);

    // Another key without the old one: nothing is changed, and the line says which key the row needs.
    const wrong = oneLineFailure(await run(['reseal-keys'], cwd, { DATABASE_URL: h.databaseUrl, SIGNING_KEY_SEAL: K2 }));
    expect(wrong).toContain(`sealed under key-encryption key ${id1}`);
    expect(wrong).toContain('set SIGNING_KEY_SEAL_OLD');
    expect((await stored()).every((v) => v.startsWith(`seal1.${id1}.`))).toBe(true);

    const rotated = await run(['reseal-keys'], cwd, { DATABASE_URL: h.databaseUrl, SIGNING_KEY_SEAL: K2, SIGNING_KEY_SEAL_OLD: K1 });
    expect(rotated.code, rotated.stderr).toBe(0);
    expect((await stored()).every((v) => v.startsWith(`seal1.${kek(Buffer.from(K2, 'base64')).id}.`))).toBe(true);
  });
});
