/**
 * Signing private keys sealed at rest (docs/signing.md, "Sealed at rest";
 * docs/decisions.md, issue 28 item 3). The database holds a key only as
 * AES-256-GCM under a key-encryption key (KEK) the nodes are given from the
 * environment or a file and that is never stored; a backup or a read-only
 * database credential then holds nothing that signs.
 *
 * Stored form: `seal1.<kek id>.<iv>.<ciphertext and tag>` (base64url parts).
 * Plain PKCS#8 (base64, which has no `.`) is what rows held before sealing,
 * and is still read, so an existing deployment keeps working until it is
 * given a KEK and resealed. The associated data binds a sealed key to its
 * app and kid: someone who can write the table cannot move a key to another
 * app or kid without the open failing.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

const PREFIX = 'seal1.';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** A key-encryption key and its public id (a hash: it tells which KEK sealed a row, and reveals nothing of it). */
export interface Kek {
  id: string;
  key: Buffer;
}

export function kek(key: Buffer): Kek {
  return { id: createHash('sha256').update('tollgate/kek-id\0').update(key).digest('hex').slice(0, 16), key };
}

/** Why a stored private key cannot be opened by this node; the message names the cause and the setting to fix. */
export class UnsealError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnsealError';
  }
}

export type SealMode = 'off' | 'on' | 'rotating';

export class KeySeal {
  constructor(
    /** Seals new keys and opens; null: keys are stored plain, as before sealing existed. */
    readonly current: Kek | null,
    /** Only opens (during a rotation, until `tollgate reseal-keys` has moved every key to `current`). */
    readonly old: Kek | null = null,
  ) {}

  get mode(): SealMode {
    return this.current === null ? 'off' : this.old === null ? 'on' : 'rotating';
  }

  /** The stored form of a new key: sealed under the current KEK, or plain when there is none. */
  seal(appId: string, kid: string, pkcs8Base64: string): string {
    if (this.current === null) return pkcs8Base64;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.current.key, iv);
    cipher.setAAD(aad(appId, kid));
    const body = Buffer.concat([cipher.update(Buffer.from(pkcs8Base64, 'base64')), cipher.final(), cipher.getAuthTag()]);
    return `${PREFIX}${this.current.id}.${iv.toString('base64url')}.${body.toString('base64url')}`;
  }

  /** The PKCS#8 DER of a stored key, or UnsealError saying why this node cannot have it. */
  open(appId: string, kid: string, stored: string): Buffer {
    if (!stored.startsWith(PREFIX)) return Buffer.from(stored, 'base64');
    const [id, iv, body] = stored.slice(PREFIX.length).split('.');
    const where = `signing key ${kid} of app ${appId}`;
    if (id === undefined || iv === undefined || body === undefined) throw new UnsealError(`${where} is stored in a sealed form this node cannot read`);
    const k = [this.current, this.old].find((c) => c?.id === id);
    if (!k) {
      if (this.current === null) throw new UnsealError(`${where} is sealed (key-encryption key ${id}), but SIGNING_KEY_SEAL is not set on this node: it cannot sign with it`);
      const given = this.old === null ? `SIGNING_KEY_SEAL is ${this.current.id}` : `SIGNING_KEY_SEAL is ${this.current.id}, SIGNING_KEY_SEAL_OLD ${this.old.id}`;
      throw new UnsealError(`${where} is sealed under key-encryption key ${id}, which this node was not given (${given}): it cannot sign with it`);
    }
    const bytes = Buffer.from(body, 'base64url');
    const nonce = Buffer.from(iv, 'base64url');
    // A full 16-byte tag and a 12-byte IV, or nothing: GCM would accept a 4-byte tag, which proves next to nothing.
    if (bytes.length <= TAG_BYTES || nonce.length !== IV_BYTES) throw new UnsealError(`${where} does not open under key-encryption key ${id}: the stored value is cut short`);
    try {
      const decipher = createDecipheriv('aes-256-gcm', k.key, nonce, { authTagLength: TAG_BYTES });
      decipher.setAAD(aad(appId, kid));
      decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
      return Buffer.concat([decipher.update(bytes.subarray(0, bytes.length - TAG_BYTES)), decipher.final()]);
    } catch {
      throw new UnsealError(`${where} does not open under key-encryption key ${id}: the stored value was altered or moved from another key`);
    }
  }

  /** Whether a stored key is sealed at all (under any KEK), rather than plain PKCS#8. */
  static isSealed(stored: string): boolean {
    return stored.startsWith(PREFIX);
  }

  /** Whether a stored key is already in the form this node would write (sealed under the current KEK, or plain without one). */
  isCurrent(stored: string): boolean {
    return this.current === null ? !stored.startsWith(PREFIX) : stored.startsWith(`${PREFIX}${this.current.id}.`);
  }
}

function aad(appId: string, kid: string): Buffer {
  return Buffer.from(`tollgate/signing-key/seal1\0${appId}\0${kid}`, 'utf8');
}
