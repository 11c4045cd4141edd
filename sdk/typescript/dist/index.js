/** tollgate-client: typed, verified calls to a Tollgate server and offline leases (docs/signing.md). */
export { TollgateClient, SDK_RELEASED_AT, noAnswerFromTollgate } from './client.js';
export { HEARTBEAT_FRACTION } from './seats.js';
export { TollgateException, TollgateNetworkError, TollgateUnavailableError, TollgateVerificationError, TollgateError, TollgateRefusedError, TollgateLeaseError, TollgateSeatLostError } from './errors.js';
export { DROP_CODES } from './transport.js';
export { FileLeaseStore, MemoryLeaseStore, appDataFolders } from './store.js';
export { hardwareId, osMachineId } from './hardware-id.js';
export { checkCertificate, decodeCertificate } from './certificate.js';
export { verifyAnswer, downloadLine, parseSignatureHeader, credentialHeadersSha256, CREDENTIAL_HEADERS } from './verify.js';
export { checkLease, parseLease, hwidHash, liveEntitlements } from './lease.js';
//# sourceMappingURL=index.js.map