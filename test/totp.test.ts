import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { base32Decode, base32Encode, hotp, matchTotp, otpauthUri, qrSvg, totpStep } from '../src/domain/admin/totp.js';

/** RFC 6238 Appendix B, SHA-1 rows: the 20-byte ASCII key "12345678901234567890", 8 digits. */
const RFC6238_SHA1: [number, string][] = [
  [59, '94287082'],
  [1111111109, '07081804'],
  [1111111111, '14050471'],
  [1234567890, '89005924'],
  [2000000000, '69279037'],
  [20000000000, '65353130'],
];
const KEY = Buffer.from('12345678901234567890', 'ascii');

describe('TOTP (RFC 6238, HMAC-SHA-1, 30 s steps)', () => {
  it('gives the RFC 6238 test vectors (8 digits), and their last 6 digits as the 6-digit codes', () => {
    for (const [seconds, code] of RFC6238_SHA1) {
      expect(hotp(KEY, totpStep(seconds * 1000), 8), `T=${seconds}`).toBe(code);
      expect(hotp(KEY, totpStep(seconds * 1000)), `T=${seconds}`).toBe(code.slice(2));
    }
  });

  it('RFC 4226 Appendix D HOTP values for counters 0..9', () => {
    const expected = ['755224', '287082', '359152', '969429', '338314', '254676', '287922', '162583', '399871', '520489'];
    expect(expected.map((_, i) => hotp(KEY, i))).toEqual(expected);
  });

  it('base32 round-trips any bytes, and decodes the RFC 4648 examples', () => {
    for (let n = 0; n < 40; n++) {
      const bytes = randomBytes(n);
      expect(base32Decode(base32Encode(bytes)).equals(bytes)).toBe(true);
    }
    expect(base32Encode(Buffer.from('foobar'))).toBe('MZXW6YTBOI');
    expect(base32Decode('MZXW6YTBOI======').toString()).toBe('foobar');
  });

  it('accepts the code of now and one step either side, refuses two steps off and anything that is not 6 digits', () => {
    const secret = base32Encode(KEY);
    const now = 1234567890_000;
    const step = totpStep(now);
    expect(matchTotp(secret, hotp(KEY, step), now)).toBe(step);
    expect(matchTotp(secret, hotp(KEY, step - 1), now)).toBe(step - 1);
    expect(matchTotp(secret, hotp(KEY, step + 1), now)).toBe(step + 1);
    expect(matchTotp(secret, hotp(KEY, step - 2), now)).toBeNull();
    expect(matchTotp(secret, hotp(KEY, step + 2), now)).toBeNull();
    for (const bad of ['', '12345', '1234567', 'abcdef', ' 123456', '12345\n']) expect(matchTotp(secret, bad, now)).toBeNull();
  });

  it('the otpauth URI names issuer, account and the defaults; the QR code is a plain SVG (no script)', () => {
    const uri = otpauthUri('JBSWY3DPEHPK3PXP', 'alice smith');
    expect(uri).toBe('otpauth://totp/Tollgate:alice%20smith?secret=JBSWY3DPEHPK3PXP&issuer=Tollgate&algorithm=SHA1&digits=6&period=30');
    const svg = qrSvg(uri);
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg).not.toMatch(/<script|href=|on\w+=/i);
  });
});
