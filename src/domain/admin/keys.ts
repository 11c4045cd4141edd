/**
 * The admin use cases of docs/signing.md "Keys": the app's root public key,
 * signing keys the server generates, their certificates (made offline with
 * the root by the CLI) and their retirement. The private half of a signing
 * key never leaves this module's insert and the key ring's parser: no view,
 * audit entry or log line carries it.
 */
import { generateKeyPairSync, verify } from 'node:crypto';
import type { ReadRepositories } from '../../store/index.js';
import type { Cursor } from '../../store/pagination.js';
import type { Page } from '../../store/records.js';
import type { SigningKeyRecord } from '../../store/repositories/signing-keys.js';
import { DomainError, validationError } from '../errors.js';
import { uuidv7 } from '../ids.js';
import { iso } from '../membership.js';
import type { Services } from '../service-types.js';
import { certificateInput, decodeCertificate, MAX_CERT_VALIDITY_MS } from '../signing/format.js';
import { forgetEndedKeys } from '../signing/keys.js';
import { ed25519PublicKey } from '../signing/points.js';
import { write } from '../unit-of-work.js';
import { appChanged, appIn } from './apps.js';
import type { AdminServices } from './audit.js';

export type KeyStatus = 'pending' | 'active' | 'retired' | 'expired';

export interface KeyView {
  kid: string;
  public_key: string;
  status: KeyStatus;
  certificate: string | null;
  not_before: string | null;
  not_after: string | null;
  created_at: string;
  retired_at: string | null;
}

export function viewKey(k: SigningKeyRecord, now: number): KeyView {
  const status: KeyStatus = k.status === 'active' && k.notAfter !== null && k.notAfter <= now ? 'expired' : k.status;
  return {
    kid: k.kid,
    public_key: k.publicKey,
    status,
    certificate: k.certificate,
    not_before: k.notBefore === null ? null : iso(k.notBefore),
    not_after: k.notAfter === null ? null : iso(k.notAfter),
    created_at: iso(k.createdAt),
    retired_at: k.retiredAt === null ? null : iso(k.retiredAt),
  };
}

export interface RootKeyView {
  app_id: string;
  public_key: string;
  /** Keys retired because the root they were certified by was replaced. */
  retired: string[];
}

/**
 * Sets the app's root public key. Replacing one needs `replace: true`: every
 * certificate made by the old root stops verifying for clients pinning the new
 * one, so the keys it certified are retired in the same transaction (a root
 * is replaced when it leaked: what it signed must not be trusted again).
 */
export async function setRootKey(s: AdminServices, appId: string, input: { public_key: string; replace?: boolean }): Promise<RootKeyView> {
  if (!ed25519PublicKey(input.public_key)) throw validationError('body.public_key', 'must be base64url (no padding) of the 32 bytes of an Ed25519 public key');
  return write(s, async ({ tx, audit, changed, emit }) => {
    const app = await appIn(tx, appId);
    if (app.rootPublicKey === input.public_key) return { app_id: appId, public_key: input.public_key, retired: [] };
    if (app.rootPublicKey !== null && input.replace !== true) {
      throw new DomainError('conflict', 'This application already has a root key; replacing it invalidates every certificate and needs "replace": true');
    }
    const now = s.clock();
    const retired = app.rootPublicKey === null ? [] : await tx.signingKeys.retireCertified(appId, now);
    await tx.signingKeys.setRootPublicKey(appId, input.public_key, now);
    await audit(app.rootPublicKey === null ? 'keys.root_set' : 'keys.root_replace', appId, appId, {
      before: { public_key: app.rootPublicKey }, after: { public_key: input.public_key }, ...(retired.length > 0 && { retired }),
    });
    await emit('root_key.set', appId, { app_id: appId, public_key: input.public_key, retired });
    changed(appChanged(app)); // drops the app's key ring too, here and on every node
    return { app_id: appId, public_key: input.public_key, retired };
  });
}

/** A new signing key, pending until its certificate arrives. The server makes the pair; its private half is never shown. */
export async function createSigningKey(s: AdminServices, appId: string): Promise<KeyView> {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const now = s.clock();
  // Time-ordered (UUIDv7): keys made in the same millisecond still sort in the order they were made, so
  // "the newest key" is never a coin toss. Public (it is in every signature header), and unique across apps.
  const kid = uuidv7(now);
  const record: SigningKeyRecord = {
    kid,
    appId,
    publicKey: publicKey.export({ format: 'jwk' }).x!,
    // Sealed under the node's key-encryption key when it has one (signing/seal.ts): the row holds no PKCS#8.
    privateKey: s.seal.seal(appId, kid, privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64')),
    certificate: null,
    notBefore: null,
    notAfter: null,
    status: 'pending',
    createdAt: now,
    retiredAt: null,
  };
  return write(s, async ({ tx, audit, changed, emit }) => {
    await appIn(tx, appId);
    await tx.signingKeys.insert(record);
    await audit('keys.create', appId, record.kid, { kid: record.kid, public_key: record.publicKey });
    changed({ keys: appId });
    const view = viewKey(record, now);
    await emit('signing_key.created', appId, { ...view });
    return view;
  });
}

const certificateError = (reason: string) => validationError('body.certificate', reason);

/** Checks a certificate for this key against the app's root; the key becomes active. */
export async function uploadCertificate(s: AdminServices, appId: string, kid: string, encoded: string): Promise<KeyView> {
  return write(s, async ({ tx, audit, changed, emit }) => {
    const app = await appIn(tx, appId);
    const key = await keyIn(tx, appId, kid);
    if (app.rootPublicKey === null) throw new DomainError('conflict', 'This application has no root key yet: set it first (tollgate keys init)');
    if (key.status !== 'pending') throw new DomainError('conflict', `This signing key is ${key.status}: only a pending key takes a certificate`);
    const now = s.clock();
    const c = decodeCertificate(encoded);
    if (!c) throw certificateError('is not a tollgate/keycert/v1 certificate (base64url of its JSON with exactly v, app_id, kid, public_key, not_before, not_after, sig)');
    const sig = /^[A-Za-z0-9_-]{86}$/.test(c.sig) ? Buffer.from(c.sig, 'base64url') : null;
    const root = ed25519PublicKey(app.rootPublicKey);
    if (!sig || sig.length !== 64 || !root || !verify(null, certificateInput(c), root, sig)) throw certificateError("is not signed by this application's root key");
    if (c.app_id !== appId) throw certificateError('is for another application');
    if (c.kid !== kid) throw certificateError('is for another signing key (kid)');
    if (c.public_key !== key.publicKey) throw certificateError("does not certify this signing key's public key");
    const validity = c.not_after - c.not_before;
    if (validity <= 0 || validity > MAX_CERT_VALIDITY_MS) throw certificateError('must have 0 < not_after - not_before <= 90 days');
    if (c.not_after <= now) throw certificateError('has already expired (not_after is in the past)');
    // Conditional on `pending`: of two concurrent uploads one certifies, the other is a conflict.
    if (!(await tx.signingKeys.certify(appId, kid, encoded, c.not_before, c.not_after))) {
      throw new DomainError('conflict', 'This signing key is no longer pending');
    }
    await audit('keys.certify', appId, kid, { kid, not_before: iso(c.not_before), not_after: iso(c.not_after) });
    changed({ keys: appId });
    const view = viewKey((await keyIn(tx, appId, kid)), now);
    await emit('signing_key.rotated', appId, { ...view });
    return view;
  });
}

/** Retires a key: status retired and its private key deleted in the same statement. It never signs again. */
export async function retireKey(s: AdminServices, appId: string, kid: string): Promise<KeyView> {
  return write(s, async ({ tx, audit, changed, emit }) => {
    await appIn(tx, appId);
    const key = await keyIn(tx, appId, kid);
    const now = s.clock();
    if (!(await tx.signingKeys.retire(appId, kid, now))) throw new DomainError('conflict', 'This signing key is already retired');
    await audit('keys.retire', appId, kid, { kid, before: { status: key.status } });
    changed({ keys: appId });
    const view = viewKey((await keyIn(tx, appId, kid)), now);
    await emit('signing_key.retired', appId, { ...view });
    return view;
  });
}

export async function listKeys(s: Services, appId: string, cursor: Cursor | null, limit: number): Promise<Page<KeyView>> {
  await appIn(s.store, appId);
  const now = s.clock();
  let page = await s.store.signingKeys.list(appId, cursor, limit);
  if (await forgetIfEnded(s, appId, page.items, now)) page = await s.store.signingKeys.list(appId, cursor, limit);
  return { items: page.items.map((k) => viewKey(k, now)), nextCursor: page.nextCursor };
}

export async function getKey(s: Services, appId: string, kid: string): Promise<KeyView> {
  await appIn(s.store, appId);
  const now = s.clock();
  const key = await keyIn(s.store, appId, kid);
  return viewKey((await forgetIfEnded(s, appId, [key], now)) ? await keyIn(s.store, appId, kid) : key, now);
}

/** Amendment C on the operator's path: a listed key past its not_after still holding its private key has it deleted first. */
async function forgetIfEnded(s: Services, appId: string, keys: SigningKeyRecord[], now: number): Promise<boolean> {
  if (!keys.some((k) => k.privateKey !== null && k.notAfter !== null && k.notAfter <= now)) return false;
  await forgetEndedKeys(s, appId, now);
  return true;
}

/** The root public key, or a 404 if the app has none yet. */
/**
 * No root yet is 404 unless `allowMissing`, when it is the normal answer `public_key: null`: a page
 * that only shows the state (the dashboard) is not asking for something absent (issue 21 item 7).
 */
export async function getRootKey(s: Services, appId: string, allowMissing = false): Promise<{ app_id: string; public_key: string | null }> {
  const app = await appIn(s.store, appId);
  if (app.rootPublicKey === null && !allowMissing) throw new DomainError('not_found', 'This application has no root key yet');
  return { app_id: appId, public_key: app.rootPublicKey };
}

async function keyIn(repos: Pick<ReadRepositories, 'signingKeys'>, appId: string, kid: string): Promise<SigningKeyRecord> {
  const key = await repos.signingKeys.find(appId, kid);
  if (!key) throw new DomainError('not_found', 'Signing key not found');
  return key;
}
