import { DomainError, type FieldError } from './errors.js';

/** Cc, Cf, Zl, Zp: control, format (incl. zero-width and bidi tricks), line and paragraph separators. */
const NON_PRINTABLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;
const WHITESPACE = /[\s\p{Z}]/u;

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
  return username.normalize('NFKC').toLowerCase();
}
