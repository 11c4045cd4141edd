/**
 * Moves every stored signing private key to the form this node writes:
 * sealed under SIGNING_KEY_SEAL (from plain PKCS#8, or from the old KEK of a
 * rotation). Run by `tollgate reseal-keys`, never at start: a node that
 * resealed on start would lock out the nodes of the same deployment not yet
 * given the new key (docs/decisions.md, issue 28 item 3).
 */
import type { ReadRepositories, Store } from '../../store/index.js';
import type { Provider } from '../../store/repositories/sales.js';
import { KeySeal, UnsealError } from './seal.js';

export interface SealReport {
  /** Keys already in the current form. */
  current: number;
  /** Keys stored plain (no KEK), or sealed under another KEK than the current one. */
  plain: number;
  other: number;
  /** Keys this node cannot open at all, with the reason. */
  unopenable: { appId: string; kid: string; reason: string }[];
}

/**
 * Everything sealed with the signing keys' KEK: the signing private keys, and the stores' webhook signing
 * secrets (src/domain/sales/secrets.ts), whose kid is `integration:<provider>`.
 */
interface SealedValue {
  appId: string;
  kid: string;
  privateKey: string;
  /** The store's integration this secret verifies; absent for a signing key. */
  provider?: Provider;
}

async function sealedValues(store: Pick<ReadRepositories, 'signingKeys' | 'sales'>): Promise<SealedValue[]> {
  const keys: SealedValue[] = (await store.signingKeys.privateKeys()).map((k) => ({ appId: k.appId, kid: k.kid, privateKey: k.privateKey }));
  const secrets: SealedValue[] = (await store.sales.storedSecrets()).map((i) => ({
    appId: i.appId, kid: `integration:${i.provider}`, privateKey: i.signingSecret, provider: i.provider,
  }));
  return [...keys, ...secrets];
}

/** How the stored keys stand against this node's seal (read only: for the start-up line and before a reseal). */
export async function sealReport(store: Pick<ReadRepositories, 'signingKeys' | 'sales'>, seal: KeySeal): Promise<SealReport> {
  const report: SealReport = { current: 0, plain: 0, other: 0, unopenable: [] };
  for (const k of await sealedValues(store)) {
    if (seal.isCurrent(k.privateKey)) {
      report.current++;
    } else {
      if (KeySeal.isSealed(k.privateKey)) report.other++;
      else report.plain++;
      try {
        seal.open(k.appId, k.kid, k.privateKey);
      } catch (err) {
        if (!(err instanceof UnsealError)) throw err;
        report.unopenable.push({ appId: k.appId, kid: k.kid, reason: err.message });
      }
    }
  }
  return report;
}

/**
 * Reseals each key that is not in the current form, one conditional update
 * each (a key retired or resealed meanwhile is left as it now is). A key that
 * cannot be opened is left untouched and reported: the command then fails.
 */
export async function resealKeys(store: Store, seal: KeySeal): Promise<{ resealed: string[]; unopenable: SealReport['unopenable'] }> {
  if (seal.current === null) throw new Error('SIGNING_KEY_SEAL is not set: there is no key to seal with');
  const resealed: string[] = [];
  const unopenable: SealReport['unopenable'] = [];
  for (const k of await sealedValues(store)) {
    if (seal.isCurrent(k.privateKey)) continue;
    let der: Buffer;
    try {
      der = seal.open(k.appId, k.kid, k.privateKey);
    } catch (err) {
      if (!(err instanceof UnsealError)) throw err;
      unopenable.push({ appId: k.appId, kid: k.kid, reason: err.message });
      continue;
    }
    const sealed = seal.seal(k.appId, k.kid, der.toString('base64'));
    der.fill(0);
    const replaced = k.provider === undefined
      ? await store.signingKeys.replacePrivateKey(k.appId, k.kid, k.privateKey, sealed)
      : await store.sales.replaceStoredSecret(k.appId, k.provider, k.privateKey, sealed);
    if (replaced) resealed.push(k.kid);
  }
  return { resealed, unopenable };
}
