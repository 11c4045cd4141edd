/** tollgate-client: typed, verified calls to a Tollgate server and offline leases (docs/signing.md). */
export { TollgateClient, SDK_RELEASED_AT, noAnswerFromTollgate, type Access, type Redemption, type TollgateClientOptions, type UserAuth } from './client.js';
export { HEARTBEAT_FRACTION, type Seat, type SeatState, type Timers } from './seats.js';
export { TollgateException, TollgateNetworkError, TollgateUnavailableError, TollgateVerificationError, TollgateError, TollgateRefusedError, TollgateLeaseError, TollgateSeatLostError, type LeaseTimes, type SeatLostReason } from './errors.js';
export type { LeaseInfo } from './offline.js';
export type { DownloadOptions, DownloadResult } from './download.js';
export type { Clock, KeyList } from './transport.js';
export { DROP_CODES } from './transport.js';
export { FileLeaseStore, MemoryLeaseStore, appDataFolders, type Folders, type LeaseStore, type StateSlot } from './store.js';
export { hardwareId, osMachineId, type MachineIdSources } from './hardware-id.js';
export { checkCertificate, decodeCertificate, type Certificate, type CertificateVerdict, type Pinned } from './certificate.js';
export { verifyAnswer, downloadLine, parseSignatureHeader, credentialHeadersSha256, CREDENTIAL_HEADERS, type AnswerVerdict, type SignedRequest, type ReceivedAnswer } from './verify.js';
export { checkLease, parseLease, hwidHash, liveEntitlements, type LeaseVerdict, type LeasePayload, type LeaseEntitlement, type RollbackState } from './lease.js';
export type * from './api-types.js';
