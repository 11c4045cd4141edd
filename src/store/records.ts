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
  /** 0: no trials (POST /trial is 403 trials_disabled); else how long a trial runs. */
  trialMinutes: number;
}

export interface AppRecord extends AppSettings {
  id: string;
  name: string;
  apiKey: string;
  apiSecretHash: string;
  /** base64url of the app's Ed25519 root public key (docs/signing.md); null until `tollgate keys init`. */
  rootPublicKey: string | null;
  /** Entitlement codes a trial grants, sorted. */
  trialEntitlements: readonly string[];
  /** Email domains refused for trials (lower-case), set by the operator (disposable addresses). */
  trialBlockedDomains: readonly string[];
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
  /** Every entitlement grant of the user, live or ended (entitlements.ts judges them at a time). */
  grants: readonly EntitlementGrant[];
  /** The limits of the templates the user holds through redeemed licenses, each until its activation ends. */
  holdings: readonly TemplateHolding[];
  /** The end of the user's trial while it is not converted; null for a user who is not (or no longer) a trial user. */
  trialEndsAt: number | null;
}

export interface EntitlementGrant {
  code: string;
  /** When the grant ends (epoch ms); null: never. */
  until: number | null;
}

export interface TemplateHolding {
  maxDevices: number | null;
  maxSeats: number | null;
  heartbeatSeconds: number | null;
  until: number | null;
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
  /** The template the license was made from (null: created with minutes/lifetime directly, or the template was deleted). */
  templateId: string | null;
  /** Copied from the template when the license was made (or when the operator applied the template again). */
  entitlements: readonly string[];
  maxDevices: number | null;
  maxSeats: number | null;
  heartbeatSeconds: number | null;
}

export interface TemplateRecord {
  id: string;
  appId: string;
  name: string;
  minutes: number | null;
  grantsLifetime: boolean;
  entitlements: readonly string[];
  maxDevices: number | null;
  redeemWithinMinutes: number | null;
  maxSeats: number | null;
  heartbeatSeconds: number | null;
  createdAt: number;
  updatedAt: number;
}

export interface TrialRecord {
  id: string;
  appId: string;
  hwidHash: string;
  emailKey: string | null;
  userId: string | null;
  startedAt: number;
  endsAt: number;
  convertedAt: number | null;
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
  /** Until when this redemption holds its entitlements and limits (null: never; also every activation made before templates). */
  endsAt: number | null;
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
