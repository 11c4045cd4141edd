export declare const MAX_CERT_VALIDITY_MS: number;
export interface Certificate {
    v: 1;
    app_id: string;
    kid: string;
    public_key: string;
    not_before: number;
    not_after: number;
    sig: string;
}
/** What the client pins: the app id and the app's public root key (base64url of 32 bytes). */
export interface Pinned {
    appId: string;
    rootPublicKey: string;
}
export type CertificateVerdict = 'ok' | 'bad_certificate' | 'wrong_app' | 'key_expired';
export declare function decodeCertificate(encoded: string): (Certificate & {
    publicKeyBytes: Uint8Array;
    sigBytes: Uint8Array;
}) | null;
export declare const certificateInput: (c: Certificate) => Uint8Array;
/** `t` inside [not_before, not_after] and a validity in (0, 90 days]. */
export declare const certificateCovers: (c: Certificate, t: number) => boolean;
/** Steps 3 and 4 of docs/signing.md: the certificate decodes, the pinned root signed it, it is this app's. */
export declare function checkCertificateChain(encoded: string, pinned: Pinned): Promise<{
    verdict: 'ok';
    cert: NonNullable<ReturnType<typeof decodeCertificate>>;
} | {
    verdict: 'bad_certificate' | 'wrong_app';
}>;
/** A certificate on its own at time `at` (the verdicts of sdk/test-vectors/certificates.json). */
export declare function checkCertificate(encoded: string, pinned: Pinned, at: number): Promise<CertificateVerdict>;
