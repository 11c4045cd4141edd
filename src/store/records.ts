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
  /** Floating seats (issue 25): concurrent devices per user, the app's default; null: no seats (a template may set them). */
  readonly maxSeats: number | null;
  /** A seat is dead once its last heartbeat is this many seconds old, plus seatGraceSeconds (the app's default). */
  readonly heartbeatSeconds: number;
  readonly seatGraceSeconds: number;
  /** Self-service device reset (POST /devices/reset): 0 turns it off. */
  readonly deviceResetCooldownSeconds: number;
  /** At most this many self-resets in any 365 days; null: no yearly cap. */
  readonly deviceResetsPerYear: number | null;
  /** 0: no trials (POST /trial is 403 trials_disabled); else how long a trial runs. */
  readonly trialMinutes: number;
}

export interface AppRecord extends AppSettings {
  readonly id: string;
  readonly name: string;
  readonly apiKey: string;
  readonly apiSecretHash: string;
  /** base64url of the app's Ed25519 root public key (docs/signing.md); null until `tollgate keys init`. */
  readonly rootPublicKey: string | null;
  /** Entitlement codes a trial grants, sorted. */
  readonly trialEntitlements: readonly string[];
  /** Email domains refused for trials (lower-case), set by the operator (disposable addresses). */
  readonly trialBlockedDomains: readonly string[];
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
  /** Every entitlement grant of the user, live or ended (entitlements.ts judges them at a time). */
  readonly grants: readonly EntitlementGrant[];
  /** The limits of the templates the user holds through redeemed licenses, each until its activation ends. */
  readonly holdings: readonly TemplateHolding[];
  /** The end of the user's trial while it is not converted; null for a user who is not (or no longer) a trial user. */
  readonly trialEndsAt: number | null;
}

export interface EntitlementGrant {
  readonly code: string;
  /** When the grant ends (epoch ms); null: never. */
  readonly until: number | null;
}

export interface TemplateHolding {
  readonly maxDevices: number | null;
  readonly maxSeats: number | null;
  readonly heartbeatSeconds: number | null;
  readonly until: number | null;
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
  /** The template the license was made from (null: created with minutes/lifetime directly, or the template was deleted). */
  readonly templateId: string | null;
  /** Copied from the template when the license was made (or when the operator applied the template again). */
  readonly entitlements: readonly string[];
  readonly maxDevices: number | null;
  readonly maxSeats: number | null;
  readonly heartbeatSeconds: number | null;
}

export interface TemplateRecord {
  readonly id: string;
  readonly appId: string;
  readonly name: string;
  readonly minutes: number | null;
  readonly grantsLifetime: boolean;
  readonly entitlements: readonly string[];
  readonly maxDevices: number | null;
  readonly redeemWithinMinutes: number | null;
  readonly maxSeats: number | null;
  readonly heartbeatSeconds: number | null;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface TrialRecord {
  readonly id: string;
  readonly appId: string;
  readonly hwidHash: string;
  readonly emailKey: string | null;
  readonly userId: string | null;
  readonly startedAt: number;
  readonly endsAt: number;
  readonly convertedAt: number | null;
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
  /** Until when this redemption holds its entitlements and limits (null: never; also every activation made before templates). */
  readonly endsAt: number | null;
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
