import { isUtf8 } from 'node:buffer';
import { DomainError, type FieldError } from '../domain/errors.js';

/**
 * Text that is not Unicode text is refused, never repaired (issue 30). Decoding
 * replaces invalid UTF-8 with U+FFFD and JSON's `\ud800` escape yields a lone
 * surrogate; either, stored, is a name or reason the client never sent, and
 * a lone surrogate cannot even be written back out as UTF-8.
 */
export const NOT_TEXT = 'must be valid UTF-8 text (no invalid byte sequences or lone surrogates)';

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const BACKSLASH_U = Buffer.from('\\u');

/**
 * Checks a JSON body parsed from `bytes`: throws a 422 naming every string or
 * key that invalid bytes or an escape damaged. Costs nothing more than one
 * scan of the bytes for valid UTF-8 without `\u` escapes, the usual body.
 */
export function checkJsonText(value: unknown, bytes: Buffer): void {
  const invalidBytes = !isUtf8(bytes);
  if (!invalidBytes && !bytes.includes(BACKSLASH_U)) return;
  const damaged = (text: string) => LONE_SURROGATE.test(text) || (invalidBytes && text.includes('\uFFFD'));
  const fields: FieldError[] = [];
  collect(value, 'body', damaged, fields, 0);
  // Invalid bytes outside every string make the JSON itself invalid, so they never arrive here; still, say so.
  if (fields.length === 0 && invalidBytes) fields.push({ field: 'body', message: NOT_TEXT });
  if (fields.length > 0) throw notText(fields);
}

/** A header's value read as the UTF-8 the client sent (Node hands header bytes over as latin1); a 422 naming it otherwise. */
export function utf8Header(value: string | undefined, name: string): string | undefined {
  if (value === undefined || /^[\x00-\x7f]*$/.test(value)) return value;
  const bytes = Buffer.from(value, 'latin1');
  if (!isUtf8(bytes)) throw notText([{ field: `header.${name}`, message: NOT_TEXT }]);
  return bytes.toString('utf8');
}

function notText(fields: FieldError[]): DomainError {
  return new DomainError('validation_error', `Invalid request: ${fields[0]!.field} ${NOT_TEXT}`, fields);
}

function collect(value: unknown, path: string, damaged: (text: string) => boolean, out: FieldError[], depth: number): void {
  if (typeof value === 'string') {
    if (damaged(value)) out.push({ field: path, message: NOT_TEXT });
    return;
  }
  if (value === null || typeof value !== 'object' || depth > 64) return;
  if (Array.isArray(value)) {
    value.forEach((inner, i) => collect(inner, `${path}.${i}`, damaged, out, depth + 1));
    return;
  }
  for (const [key, inner] of Object.entries(value)) {
    if (damaged(key)) out.push({ field: path, message: `has a key that ${NOT_TEXT}` });
    else collect(inner, `${path}.${key}`, damaged, out, depth + 1);
  }
}
