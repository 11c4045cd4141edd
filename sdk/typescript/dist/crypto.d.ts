type Bytes = Uint8Array;
export declare function sha256(bytes: Bytes): Promise<Bytes>;
export declare const sha256Hex: (bytes: Bytes | string) => Promise<string>;
/** Incremental SHA-256 for downloads (WebCrypto has none): node:crypto, loaded only when a file is downloaded. */
export declare function incrementalSha256(): Promise<{
    update(b: Bytes): void;
    hex(): string;
}>;
/** Ed25519 verification; false (never a throw) for a key or signature of the wrong length. */
export declare function ed25519Verify(publicKey: Bytes, signature: Bytes, message: Bytes): Promise<boolean>;
export declare function hmacSha256Hex(key: Bytes, message: Bytes): Promise<string>;
/** A fresh nonce: 32 base64url characters (24 random bytes), inside the 16–64 the server accepts. */
export declare function newNonce(): string;
export {};
