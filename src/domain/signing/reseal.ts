/**
 * Moves every stored signing private key to the form this node writes:
 * sealed under SIGNING_KEY_SEAL (from plain PKCS#8, or from the old KEK of a
 * rotation). Run by `tollgate reseal-keys`, never at start: a node that
 * resealed on start would lock out the nodes of the same deployment not yet
 * given the new key (docs/decisions.md, issue 28 item 3).
 */
import type { ReadRepositories, Store } from '../../store/index.js';
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

/** How the stored keys stand against this node's seal (read only: for the start-up line and before a reseal). */
export async function sealReport(store: Pick<ReadRepositories, 'signingKeys'>, seal: KeySeal): Promise<SealReport> {
  const report: SealReport = { current: 0, plain: 0, other: 0, unopenable: [] };
  for (const k of await store.signingKeys.privateKeys()) {
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
  for (const k of await store.signingKeys.privateKeys()) {
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
    if (await store.signingKeys.replacePrivateKey(k.appId, k.kid, k.privateKey, sealed)) resealed.push(k.kid);
  }
  return { resealed, unopenable };
}
