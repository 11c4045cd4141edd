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
  /** Issue 25: floating seats and self-service device resets (absent from servers before it). */
  max_seats?: number | null;
  heartbeat_seconds?: number;
  seat_grace_seconds?: number;
  device_reset_cooldown_seconds?: number;
  device_resets_per_year?: number | null;
}
export interface AppRecord extends AppSettingsRecord { id: string; name: string; api_key: string; created_at: string; updated_at: string }
export interface AppWithSecret extends AppRecord { api_secret: string }

export interface License {
  id: string; code: string; minutes: number | null; grants_lifetime_access: boolean; revokes_lifetime_access: boolean;
  note: string | null; expires_at: string | null; created_at: string; used_at: string | null; used_by_user_id: string | null;
  /** Issue 24: the template it was made from, and what it copied from it. */
  template_id?: string | null; entitlements?: string[];
}
export interface Membership { is_active: boolean; is_lifetime: boolean; active_until: string | null }
export interface UserSummary { id: string; username: string; membership: Membership; created_at: string; password_set: boolean; device_count: number }
export interface UserDetailRecord extends UserSummary {
  signup_license_id: string | null;
  devices: { id: string; hardware_id: string; created_at: string; last_seen_at: string }[];
  ips: { ip: string; first_seen_at: string; last_seen_at: string; count: number }[];
  activations: { id: string; license_id: string; occurred_at: string; minutes: number | null; grants_lifetime_access: boolean; revokes_lifetime_access: boolean }[];
  sessions: { id: string; hardware_id: string | null; ip: string | null; created_at: string; expires_at: string }[];
  /** Live floating seats (issue 25); absent from servers before it. */
  seats?: Seat[];
  /** The user's own device resets (POST /devices/reset), not the operator's. */
  self_resets?: { count: number; last_at: string | null };
  bans?: Ban[];
  banned?: boolean;
}
export interface Seat { id: string; user_id: string; hardware_id: string; checked_out_at: string; last_heartbeat_at: string; expires_at: string }
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
export interface StatsPoint { at: string; sign_ups: number; logins: number; activations: number; failed_logins: number; trials: number }
export interface Stats {
  bucket: 'hour' | 'day';
  series: StatsPoint[];
  active_memberships: number;
  /** Users on a running trial now (issue 24). */
  running_trials: number;
  licenses: { used: number; unused: number };
  top_ban_hits: { ban_id: string; type: BanType; value: string; hits: number }[];
}
/** A license template (issue 24). */
export interface Template {
  id: string; name: string; minutes: number | null; lifetime: boolean; entitlements: string[]; max_devices: number | null;
  redeem_within_minutes: number | null; max_seats: number | null; heartbeat_seconds: number | null; created_at: string; updated_at: string;
}
