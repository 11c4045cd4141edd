/** What the repositories return: camelCase, booleans as booleans, times as epoch milliseconds. */
export interface AppSettings {
  deviceAuthEnabled: boolean;
  anonymousAccessAllowed: boolean;
  maxDevicesPerUser: number;
  sessionTtlSeconds: number;
  passwordMinLength: number;
  registrationOpen: boolean;
  /** 0: no cap on live sessions per user; else a new login ends the oldest beyond it. */
  maxSessionsPerUser: number;
  rateFailuresPerIdentity: number;
  rateFailuresPerIdentityWindowSeconds: number;
  rateFailuresPerIp: number;
  rateFailuresPerIpWindowSeconds: number;
  rateSignupsPerIp: number;
  rateSignupsPerIpWindowSeconds: number;
  /** 0: no app-wide cap. */
  rateSignupsPerApp: number;
  rateSignupsPerAppWindowSeconds: number;
  /** Setting `signatures`: true for `required` (a request without Tollgate-Nonce is 422 nonce_required). */
  signaturesRequired: boolean;
  /** 0: no offline leases (403 leases_disabled); else a lease's offline grace and runtime budget. */
  offlineGraceSeconds: number;
  leaseRenewSeconds: number;
  /** Floating seats (issue 25): concurrent devices per user, the app's default; null: no seats (a template may set them). */
  maxSeats: number | null;
  /** A seat is dead once its last heartbeat is this many seconds old, plus seatGraceSeconds (the app's default). */
  heartbeatSeconds: number;
  seatGraceSeconds: number;
  /** Self-service device reset (POST /devices/reset): 0 turns it off. */
  deviceResetCooldownSeconds: number;
  /** At most this many self-resets in any 365 days; null: no yearly cap. */
  deviceResetsPerYear: number | null;
}

export interface AppRecord extends AppSettings {
  id: string;
  name: string;
  apiKey: string;
  apiSecretHash: string;
  /** base64url of the app's Ed25519 root public key (docs/signing.md); null until `tollgate keys init`. */
  rootPublicKey: string | null;
  createdAt: number;
  updatedAt: number;
}

export interface UserRecord {
  id: string;
  appId: string;
  username: string;
  passwordHash: string | null;
  signupLicenseId: string | null;
  /** The code of the license this account was created from (license sign-up), for license bans. */
  signupCode: string | null;
  isLifetime: boolean;
  activeUntil: number | null;
  deviceCount: number;
  createdAt: number;
}

export interface LicenseRecord {
  id: string;
  appId: string;
  code: string;
  minutes: number | null;
  grantsLifetime: boolean;
  revokesLifetime: boolean;
  note: string | null;
  expiresAt: number | null;
  createdAt: number;
  usedAt: number | null;
  usedByUserId: string | null;
}

export interface ActivationRecord {
  id: string;
  appId: string;
  userId: string;
  licenseId: string;
  occurredAt: number;
  minutes: number | null;
  grantsLifetime: boolean;
  revokesLifetime: boolean;
}

export interface DeviceRecord {
  id: string;
  userId: string;
  hardwareId: string;
  createdAt: number;
  lastSeenAt: number;
}

export interface UserIpRecord {
  ip: string;
  firstSeenAt: number;
  lastSeenAt: number;
  count: number;
}

export interface SessionRecord {
  id: string;
  appId: string;
  userId: string;
  hardwareId: string | null;
  ip: string | null;
  createdAt: number;
  expiresAt: number;
}

export interface VariableRecord {
  name: string;
  value: string;
  updatedAt: number;
}

export interface FileRecord {
  id: string;
  appId: string;
  name: string;
  mimeType: string;
  isEncrypted: boolean;
  blobId: string;
  size: number;
  sha256: string;
  chunkSize: number;
  createdAt: number;
  updatedAt: number;
}

export type BanType = 'ip' | 'hardware_id' | 'license' | 'user';

export interface BanRecord {
  id: string;
  appId: string;
  type: BanType;
  value: string;
  reason: string | null;
  expiresAt: number | null;
  createdAt: number;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
  /** Every row matching the list's filters, when asked for (`?with_total=true`). */
  total?: number;
}
