/**
 * Bytes and text without Node's Buffer, so the verifier also runs in an
 * Electron renderer or a browser. base64url is strict (RFC 4648 §5, no
 * padding): anything else is not a Tollgate value.
 */
export declare const utf8: (text: string) => Uint8Array;
/** Strict UTF-8: invalid sequences are an error, not U+FFFD (a forged value must not decode to a valid one). */
export declare const fromUtf8: (bytes: Uint8Array) => string;
export declare function b64urlDecode(text: string): Uint8Array | null;
export declare function b64urlEncode(bytes: Uint8Array): string;
export declare function hex(bytes: Uint8Array): string;
export declare function concat(...parts: Uint8Array[]): Uint8Array;
/** Constant-time comparison of two strings of the same public length (MACs, hashes). */
export declare function equalConstantTime(a: string, b: string): boolean;
/** Decodes base64url of a UTF-8 JSON object; null if it is not one. */
export declare function decodeJsonObject(text: string): Record<string, unknown> | null;
/** True when the object has exactly these keys (no more, no fewer). */
export declare const hasExactKeys: (o: Record<string, unknown>, keys: readonly string[]) => boolean;
