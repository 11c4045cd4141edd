import { DomainError, type FieldError } from './errors.js';

/** Cc, Cf, Zl, Zp: control, format (incl. zero-width and bidi tricks), line and paragraph separators. */
const NON_PRINTABLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;
const WHITESPACE = /[\s\p{Z}]/u;
const VISIBLE_ASCII = /^[\x21-\x7e]*$/;

export function codePoints(value: string): number {
  let n = 0;
  for (const _ of value) n++;
  return n;
}

export interface TextRule {
  min: number;
  max: number;
  noWhitespace?: boolean;
}

export const USERNAME: TextRule = { min: 3, max: 64, noWhitespace: true };
export const LICENSE_CODE: TextRule = { min: 1, max: 128 };
export const HARDWARE_ID: TextRule = { min: 1, max: 256 };
export const PASSWORD_MAX_BYTES = 1024;

/** Collects field errors so one 422 can name every bad field. */
export class Checker {
  readonly errors: FieldError[] = [];

  text(field: string, value: string | undefined, rule: TextRule): void {
    if (value === undefined) return;
    // Fast path for the common case: visible ASCII is already NFKC, printable and free of whitespace.
    if (VISIBLE_ASCII.test(value)) {
      if (value.length < rule.min || value.length > rule.max) this.add(field, `must be ${rule.min} to ${rule.max} characters long`);
      return;
    }
    const normalised = value.normalize('NFKC');
    const length = codePoints(normalised);
    if (length < rule.min || length > rule.max) {
      this.add(field, `must be ${rule.min} to ${rule.max} characters long`);
    } else if (NON_PRINTABLE.test(normalised)) {
      this.add(field, 'must contain only printable characters');
    } else if (rule.noWhitespace && WHITESPACE.test(normalised)) {
      this.add(field, 'must not contain whitespace');
    }
  }

  /** At most 1024 UTF-8 bytes everywhere; `minLength` (the app's setting) only on sign-up and password change. */
  password(field: string, value: string | undefined, minLength: number | null): void {
    if (value === undefined) return;
    if (Buffer.byteLength(value, 'utf8') > PASSWORD_MAX_BYTES) {
      this.add(field, `must be at most ${PASSWORD_MAX_BYTES} bytes`);
    } else if (minLength !== null && codePoints(value.normalize('NFKC')) < minLength) {
      this.add(field, `must be at least ${minLength} characters long`);
    }
  }

  required(field: string, value: unknown, why = 'is required'): void {
    if (value === undefined || value === null) this.add(field, why);
  }

  add(field: string, message: string): void {
    this.errors.push({ field, message });
  }

  throwIfAny(): void {
    const first = this.errors[0];
    if (first) {
      throw new DomainError('validation_error', `Invalid request: ${first.field} ${first.message}`, this.errors);
    }
  }
}

/** The key that makes usernames unique per app regardless of case and compatibility forms. */
export function usernameKey(username: string): string {
  return (VISIBLE_ASCII.test(username) ? username : username.normalize('NFKC')).toLowerCase(); // ASCII is its own NFKC
}

/** The latest instant Tollgate stores: 9999-12-31T23:59:59.999Z (beyond it ISO 8601 needs a sign and clients break). */
export const MAX_TIME = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

const ISO_8601 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:(Z)|([+-])(\d{2}):?(\d{2}))$/;

/** What a 422 for a bad time says. */
export const TIMESTAMP_HINT = 'must be an ISO 8601 timestamp with a zone, such as 2027-03-05T12:00:00Z, 2027-03-05T14:00+02:00 or 2027-03-05T14:00+0200';

/**
 * A strict ISO 8601 timestamp with a zone: seconds and a fraction optional,
 * `Z` or an offset with or without its colon (`2027-03-05T12:00Z`,
 * `2027-03-05T12:00:00.250+02:00`, `…+0200` as `date +%z` prints it),
 * within years 1970–9999 (UTC); null otherwise. Computed from its parts, not
 * by Date.parse, which accepts "12" or "March 5" and rolls 30 February over
 * into March. A fraction finer than milliseconds is truncated (the store keeps
 * milliseconds).
 */
export function parseTimestamp(raw: string): number | null {
  const m = ISO_8601.exec(raw);
  if (!m) return null;
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map((part) => (part === undefined ? 0 : Number(part))) as [number, number, number, number, number, number];
  const ms = m[7] === undefined ? 0 : Number(m[7].padEnd(3, '0').slice(0, 3));
  const sign = m[9] === '-' ? -1 : 1;
  const offsetH = m[10] === undefined ? 0 : Number(m[10]);
  const offsetM = m[11] === undefined ? 0 : Number(m[11]);
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59 || offsetH > 23 || offsetM > 59) return null;
  // Before Date.UTC, which reads years 0-99 as 1900-1999 (0070 would be stored as 1970). 1969 stays: with an offset it may be 1970 in UTC.
  if (y < 1969) return null;
  const local = Date.UTC(y, mo - 1, d, h, mi, s, ms);
  if (new Date(local).getUTCDate() !== d) return null; // 30 February, 31 April
  const at = local - sign * (offsetH * 60 + offsetM) * 60_000;
  return at < 0 || at > MAX_TIME ? null : at;
}
