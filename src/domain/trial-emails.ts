import { validationError } from './errors.js';

/**
 * The email rules of verified trials (issue 24), kept apart from trials.ts so the app settings
 * (admin/apps.ts) can check the operator's domain list without importing the trial flow.
 */
export const EMAIL_MAX = 254;
const GMAIL = new Set(['gmail.com', 'googlemail.com']);

/**
 * The key an email is counted under for "one trial per email": lower-case; `+tag` removed from the local
 * part; for gmail.com and googlemail.com (one mailbox under both) also every dot, and the domain is
 * gmail.com. Null when the text is not an address (local@domain, no spaces).
 */
export function emailKey(email: string): string | null {
  const lower = email.trim().toLowerCase();
  const at = lower.lastIndexOf('@');
  if (at <= 0 || at === lower.length - 1 || /\s/.test(lower)) return null;
  let local = lower.slice(0, at);
  let domain = lower.slice(at + 1);
  if (local.includes('@') || !domain.includes('.') || domain.startsWith('.') || domain.endsWith('.')) return null;
  const plus = local.indexOf('+');
  if (plus >= 0) local = local.slice(0, plus);
  if (GMAIL.has(domain)) {
    local = local.replaceAll('.', '');
    domain = 'gmail.com';
  }
  if (local.length === 0) return null;
  return `${local}@${domain}`;
}

/** The operator's list of refused domains: lower-cased, sorted, once each; each a plausible domain name. */
export function checkDomains(field: string, domains: readonly string[]): string[] {
  const out = new Set<string>();
  for (const [i, d] of domains.entries()) {
    const domain = d.trim().toLowerCase();
    if (!/^[a-z0-9](?:[a-z0-9-]{0,62}\.)*[a-z0-9-]{1,63}$/.test(domain) || domain.length > 253) throw validationError(`${field}.${i}`, 'must be a domain name such as mailinator.com');
    out.add(domain);
  }
  return [...out].sort();
}

/** A domain is refused when it or any parent domain is on the list (sub.mailinator.com with mailinator.com). */
export function blocked(list: readonly string[], domain: string): boolean {
  if (list.length === 0) return false;
  const parts = domain.split('.');
  for (let i = 0; i < parts.length - 1; i++) if (list.includes(parts.slice(i).join('.'))) return true;
  return false;
}

