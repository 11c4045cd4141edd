/**
 * What the repositories return: camelCase, booleans as booleans, times as epoch milliseconds. Readonly: caches
 * hand the same record to every request and keep values derived from it by its identity (cache.ts, `perRecord`);
 * a change is a new record, never an edit of one.
 */
export interface AppSettings {
  readonly deviceAuthEnabled: boolean;
  readonly anonymousAccessAllowed: boolean;
  readonly maxDevicesPerUser: number;
  readonly sessionTtlSeconds: number;
  readonly passwordMinLength: number;
  readonly registrationOpen: boolean;
  /** 0: no cap on live sessions per user; else a new login ends the oldest beyond it. */
  readonly maxSessionsPerUser: number;
  readonly rateFailuresPerIdentity: number;
  readonly rateFailuresPerIdentityWindowSeconds: number;
  readonly rateFailuresPerIp: number;
  readonly rateFailuresPerIpWindowSeconds: number;
  readonly rateSignupsPerIp: number;
  readonly rateSignupsPerIpWindowSeconds: number;
  /** 0: no app-wide cap. */
  readonly rateSignupsPerApp: number;
  readonly rateSignupsPerAppWindowSeconds: number;
  /** Setting `signatures`: true for `required` (a request without Tollgate-Nonce is 422 nonce_required). */
  readonly signaturesRequired: boolean;
  /** 0: no offline leases (403 leases_disabled); else a lease's offline grace and runtime budget. */
  readonly offlineGraceSeconds: number;
  readonly leaseRenewSeconds: number;
}

export interface AppRecord extends AppSettings {
  readonly id: string;
  readonly name: string;
  readonly apiKey: string;
  readonly apiSecretHash: string;
  /** base64url of the app's Ed25519 root public key (docs/signing.md); null until `tollgate keys init`. */
  readonly rootPublicKey: string | null;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface UserRecord {
  readonly id: string;
  readonly appId: string;
  readonly username: string;
  readonly passwordHash: string | null;
  readonly signupLicenseId: string | null;
  /** The code of the license this account was created from (license sign-up), for license bans. */
  readonly signupCode: string | null;
  readonly isLifetime: boolean;
  readonly activeUntil: number | null;
  readonly deviceCount: number;
  readonly createdAt: number;
}

export interface LicenseRecord {
  readonly id: string;
  readonly appId: string;
  readonly code: string;
  readonly minutes: number | null;
  readonly grantsLifetime: boolean;
  readonly revokesLifetime: boolean;
  readonly note: string | null;
  readonly expiresAt: number | null;
  readonly createdAt: number;
  readonly usedAt: number | null;
  readonly usedByUserId: string | null;
}

export interface ActivationRecord {
  readonly id: string;
  readonly appId: string;
  readonly userId: string;
  readonly licenseId: string;
  readonly occurredAt: number;
  readonly minutes: number | null;
  readonly grantsLifetime: boolean;
  readonly revokesLifetime: boolean;
}

export interface DeviceRecord {
  readonly id: string;
  readonly userId: string;
  readonly hardwareId: string;
  readonly createdAt: number;
  readonly lastSeenAt: number;
}

export interface UserIpRecord {
  readonly ip: string;
  readonly firstSeenAt: number;
  readonly lastSeenAt: number;
  readonly count: number;
}

export interface SessionRecord {
  readonly id: string;
  readonly appId: string;
  readonly userId: string;
  readonly hardwareId: string | null;
  readonly ip: string | null;
  readonly createdAt: number;
  readonly expiresAt: number;
}

export interface VariableRecord {
  readonly name: string;
  readonly value: string;
  readonly updatedAt: number;
}

export interface FileRecord {
  readonly id: string;
  readonly appId: string;
  readonly name: string;
  readonly mimeType: string;
  readonly isEncrypted: boolean;
  readonly blobId: string;
  readonly size: number;
  readonly sha256: string;
  readonly chunkSize: number;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export type BanType = 'ip' | 'hardware_id' | 'license' | 'user';

export interface BanRecord {
  readonly id: string;
  readonly appId: string;
  readonly type: BanType;
  readonly value: string;
  readonly reason: string | null;
  readonly expiresAt: number | null;
  readonly createdAt: number;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
  /** Every row matching the list's filters, when asked for (`?with_total=true`). */
  total?: number;
}
