import { createHmac } from 'node:crypto';
import qrcode from 'qrcode-generator';
import type { RandomSource } from '../deps.js';
import { constantTimeEqual } from '../tokens.js';

/** RFC 6238 as every authenticator app reads it by default: HMAC-SHA-1, 6 digits, 30-second steps. */
export const TOTP_STEP_SECONDS = 30;
export const TOTP_DIGITS = 6;
/** Steps either side of now that are accepted: a phone's clock a little off, a code typed as it changed. */
const WINDOW = 1;

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

export function base32Encode(bytes: Buffer): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out;
}

export function base32Decode(text: string): Buffer {
  const bytes: number[] = [];
  let bits = 0;
  let value = 0;
  for (const ch of text.replace(/=+$/, '').toUpperCase()) {
    const index = BASE32.indexOf(ch);
    if (index < 0) throw new Error('not base32');
    value = ((value << 5) | index) & 0xffff;
    bits += 5;
    if (bits >= 8) {
      bytes.push((value >>> (bits - 8)) & 255);
      bits -= 8;
    }
  }
  return Buffer.from(bytes);
}

/** RFC 4226 HOTP: the code for one counter value. */
export function hotp(key: Buffer, counter: number, digits = TOTP_DIGITS): string {
  const message = Buffer.alloc(8);
  message.writeBigUInt64BE(BigInt(counter));
  const mac = createHmac('sha1', key).update(message).digest();
  const offset = mac[mac.length - 1]! & 0x0f;
  const binary = mac.readUInt32BE(offset) & 0x7fffffff;
  return String(binary % 10 ** digits).padStart(digits, '0');
}

export const totpStep = (nowMs: number): number => Math.floor(nowMs / 1000 / TOTP_STEP_SECONDS);

/** 160 random bits, the size RFC 4226 recommends for an HMAC-SHA-1 key, in base32 as apps take it. */
export function newTotpSecret(random: RandomSource): string {
  return base32Encode(random(20));
}

/**
 * The time step whose code this is (now ± one step), or null. Every
 * candidate is compared, in constant time: the code is attacker input. The
 * caller must still use the step up (once only) to refuse a replay.
 */
export function matchTotp(secret: string, code: string, nowMs: number): number | null {
  if (!/^\d{6}$/.test(code)) return null;
  const key = base32Decode(secret);
  const now = totpStep(nowMs);
  let found: number | null = null;
  for (let step = now - WINDOW; step <= now + WINDOW; step++) {
    if (constantTimeEqual(hotp(key, step), code) && found === null) found = step;
  }
  return found;
}

/** What an authenticator app scans (Key Uri Format): issuer and account label, the secret, the defaults spelled out. */
export function otpauthUri(secret: string, account: string, issuer = 'Tollgate'): string {
  const label = `${encodeURIComponent(issuer)}:${encodeURIComponent(account)}`;
  return `otpauth://totp/${label}?secret=${secret}&issuer=${encodeURIComponent(issuer)}&algorithm=SHA1&digits=${TOTP_DIGITS}&period=${TOTP_STEP_SECONDS}`;
}

/** The URI as a QR code, an SVG document (no script, no external reference) the page can show as an image. */
export function qrSvg(text: string): string {
  const qr = qrcode(0, 'M');
  qr.addData(text, 'Byte');
  qr.make();
  return qr.createSvgTag({ cellSize: 4, margin: 4, scalable: true });
}
