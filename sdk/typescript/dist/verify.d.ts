/**
 * Verification of a signed answer (docs/signing.md, "Signed answers"): the
 * ordered checks, the first failure being the verdict. Runs before the body
 * is parsed: the caller hands over raw bytes and parses only after `ok`.
 */
import { type Pinned } from './certificate.js';
export type AnswerVerdict = 'ok' | 'missing_signature' | 'malformed_signature' | 'bad_certificate' | 'wrong_app' | 'kid_mismatch' | 'key_retired' | 'key_expired' | 'bad_signature';
export interface SignedRequest {
    method: string;
    /** Path and query exactly as sent on the request line. */
    target: string;
    body: Uint8Array;
    nonce: string;
    /** Hex SHA-256 of the credential headers sent (credentialHeadersSha256): binds the answer to the user asked about. */
    credentialsSha256: string;
}
export interface ReceivedAnswer {
    status: number;
    signature: string | null | undefined;
    certificate: string | null | undefined;
    /** Hex SHA-256 of the body, or a download's `file-sha256=…; content-range=…` line (see downloadLine). */
    responseLine: string;
}
export interface AnswerCheck {
    verdict: AnswerVerdict;
    kid?: string;
    /** The server's time, trusted once the verdict is ok. */
    t?: number;
    /** The signing key's certificate validity, once the certificate verified. */
    notAfter?: number;
    notBefore?: number;
}
export declare function parseSignatureHeader(value: string): {
    kid: string;
    t: number;
    sig: Uint8Array;
} | null;
/** The headers that say who the user is, in the order they are hashed (docs/signing.md). */
export declare const CREDENTIAL_HEADERS: readonly ['authorization', 'x-api-license-code', 'x-api-username', 'x-api-password', 'x-hardware-id'];
/**
 * Hex SHA-256 over `name:value\n` for each credential header sent, in CREDENTIAL_HEADERS order.
 * `headers` by lower-case name, each value as the byte string put on the wire (one char per byte:
 * the SDK sends text as its UTF-8 bytes), trimmed of spaces and tabs as the server's parser trims.
 * Without it a proxy could swap a paying user's credentials in under our nonce and hand us that
 * user's validly signed answer or lease.
 */
export declare function credentialHeadersSha256(headers: Readonly<Record<string, string | undefined>>): Promise<string>;
export declare const downloadLine: (fileSha256: string, contentRange: string | null | undefined) => string;
export declare function responseLineOf(body: Uint8Array): Promise<string>;
export declare function verifyAnswer(pinned: Pinned, retired: ReadonlySet<string>, request: SignedRequest, answer: ReceivedAnswer): Promise<AnswerCheck>;
