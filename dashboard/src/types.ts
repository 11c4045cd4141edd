/** The admin API's records as /openapi.json describes them (src/http/admin-schemas.ts). */
import type { Role } from './api';

export interface AppSettingsRecord {
  device_auth_enabled: boolean;
  anonymous_access_allowed: boolean;
  max_devices_per_user: number;
  session_ttl_seconds: number;
  password_min_length: number;
  registration_open: boolean;
  max_sessions_per_user: number;
  rate_failures_per_identity: number;
  rate_failures_per_identity_window_seconds: number;
  rate_failures_per_ip: number;
  rate_failures_per_ip_window_seconds: number;
  rate_signups_per_ip: number;
  rate_signups_per_ip_window_seconds: number;
  rate_signups_per_app: number;
  rate_signups_per_app_window_seconds: number;
  signatures: 'optional' | 'required';
  offline_grace_seconds: number;
  lease_renew_seconds: number;
}
export interface AppRecord extends AppSettingsRecord { id: string; name: string; api_key: string; created_at: string; updated_at: string }
export interface AppWithSecret extends AppRecord { api_secret: string }

export interface License {
  id: string; code: string; minutes: number | null; grants_lifetime_access: boolean; revokes_lifetime_access: boolean;
  note: string | null; expires_at: string | null; created_at: string; used_at: string | null; used_by_user_id: string | null;
}
export interface Membership {
  is_active: boolean; is_lifetime: boolean; active_until: string | null;
  /** Issue 24: present (true) while the user is on a running trial; the codes the user holds now. */
  is_trial?: true; entitlements?: string[];
}
export interface UserSummary { id: string; username: string; membership: Membership; created_at: string; password_set: boolean; device_count: number }
export interface UserDetailRecord extends UserSummary {
  signup_license_id: string | null;
  devices: { id: string; hardware_id: string; created_at: string; last_seen_at: string }[];
  ips: { ip: string; first_seen_at: string; last_seen_at: string; count: number }[];
  activations: { id: string; license_id: string; occurred_at: string; minutes: number | null; grants_lifetime_access: boolean; revokes_lifetime_access: boolean }[];
  sessions: { id: string; hardware_id: string | null; ip: string | null; created_at: string; expires_at: string }[];
  bans?: Ban[];
  banned?: boolean;
}
export type BanType = 'ip' | 'hardware_id' | 'license' | 'user';
export interface Ban { id: string; type: BanType; value: string; reason: string | null; expires_at: string | null; created_at: string; hits?: number }
export interface Variable { name: string; value: string; updated_at: string }
export interface StoredFile { id: string; name: string; mime_type: string; is_encrypted: boolean; size: number; sha256: string; created_at: string; updated_at: string }
export interface AdminToken {
  id: string; name: string; role?: Role; created_at: string; last_used_at: string | null; revoked_at: string | null;
  /** Who minted it; absent from servers before migration 9, null for the environment's token, the local CLI and the first start. */
  operator_id?: string | null; operator_username?: string | null;
}
export interface AuditEvent { id: string; at: string; actor: string; action: string; app_id: string | null; target_id: string | null; details: Record<string, unknown> }
export interface SigningKey {
  kid: string; public_key: string; status: 'pending' | 'active' | 'retired' | 'expired'; certificate: string | null;
  not_before: string | null; not_after: string | null; created_at: string; retired_at: string | null;
}
export interface OperatorRecord {
  id: string; username: string; role: Role; totp_enabled: boolean; disabled?: boolean; disabled_at?: string | null;
  created_at: string; last_login_at?: string | null;
}
/** `trials`: trials started in the bucket (issue 24; absent from servers before it). */
export interface StatsPoint { at: string; sign_ups: number; logins: number; activations: number; failed_logins: number; trials?: number }
export interface Stats {
  bucket: 'hour' | 'day';
  series: StatsPoint[];
  active_memberships: number;
  /** Users on a running trial now (issue 24; absent from servers before it). */
  running_trials?: number;
  licenses: { used: number; unused: number };
  top_ban_hits: { ban_id: string; type: BanType; value: string; hits: number }[];
}

/* Issue 23 (webhooks out, the event outbox, sales in), 24 (templates, entitlements, trials), 25 (seats, self-reset). */
export interface AppSettingsRecord {
  trial_minutes?: number;
  trial_entitlements?: string[];
  trial_blocked_domains?: string[];
  max_seats?: number | null;
  heartbeat_seconds?: number;
  seat_grace_seconds?: number;
  device_reset_cooldown_seconds?: number;
  device_resets_per_year?: number | null;
}
export interface License {
  template_id?: string | null; entitlements?: string[]; max_devices?: number | null; max_seats?: number | null; heartbeat_seconds?: number | null;
}
export interface UserDetailRecord {
  entitlement_grants?: EntitlementGrant[];
  seats?: Seat[];
  self_resets?: { count: number; last_at: string | null };
}
export interface EntitlementGrant { id: string; code: string; source: 'license' | 'operator' | 'trial'; license_id: string | null; until: string | null; live: boolean; created_at: string }
export interface Template {
  id: string; name: string; minutes: number | null; lifetime: boolean; entitlements: string[]; max_devices: number | null;
  redeem_within_minutes: number | null; max_seats: number | null; heartbeat_seconds: number | null; created_at: string; updated_at: string;
}
export interface Trial {
  id: string; hwid_hash: string; email_key: string | null; user_id: string | null; started_at: string; ends_at: string; converted_at: string | null;
  status: 'running' | 'ended' | 'converted';
}
export interface Seat { id: string; user_id: string; hardware_id: string; checked_out_at: string; last_heartbeat_at: string; expires_at: string }
export interface SeatList { items: Seat[]; total: number }

export type WebhookKind = 'standard' | 'discord';
export interface WebhookEndpoint {
  id: string; app_id: string | null; url: string; kind: WebhookKind; event_types: string[] | null; description: string; enabled: boolean;
  disabled_reason: string | null; failing_since: string | null; previous_secret_until: string | null; created_at: string; updated_at: string;
}
export interface WebhookAttempt { at: string; status: number | null; error: string | null; body: string | null; duration_ms: number }
export interface WebhookDelivery {
  id: string; event_id: string; event_type: string; status: 'pending' | 'delivered' | 'failed'; attempts: number; next_attempt_at: string | null;
  last_status: number | null; created_at: string; updated_at: string; attempt_log: WebhookAttempt[];
}
export interface OutboxEvent { id: string; type: string; occurred_at: string; app_id: string | null; data: Record<string, unknown> }

export type Provider = 'stripe' | 'paddle' | 'lemonsqueezy';
export interface Integration { provider: Provider; enabled: boolean; secret_hint: string; webhook_path: string; created_at: string; updated_at: string }
export interface ProductMapping { id: string; product_key: string; minutes: number | null; lifetime: boolean; template_id: string | null; codes_per_unit: number; note: string | null; created_at: string; updated_at: string }
export interface Order {
  id: string; provider: Provider; order_ref: string; payment_ref: string | null; subscription_ref: string | null; event_id: string;
  buyer_email: string | null; customer_ref: string | null; status: 'active' | 'cancelled' | 'refunded'; created_at: string; updated_at: string;
}
export interface OrderLicense { license_id: string; code: string; minutes: number | null; lifetime: boolean; renewal_minutes: number; state: 'issued' | 'revoked' }
