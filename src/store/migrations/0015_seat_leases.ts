// Why: issue 25's floating-seat hole. An offline lease holds its device's seat
// until the lease's exp, but DELETE /seats and the user's self-reset deleted
// the row at once while the signed lease stayed valid offline: take a lease,
// release, take another on another device, and so on, for unlimited offline
// seats. lease_until is the latest exp of a lease that took or renewed the
// seat (NULL: no lease ever did); the user's release and self-reset leave a
// seat standing until then (docs/decisions.md). Heartbeats never touch it.
// Seats taken before this migration: which of them a lease holds was never
// recorded, but a lease pushed expires_at to at least its exp and nothing
// moves expires_at back, so lease_until = expires_at covers every lease issued
// before the upgrade. A seat only heartbeats held is then kept by the user's
// release until its current expires_at: at most one heartbeat window (and its
// grace) longer, once.
import type { Migration } from './migration.js';

export const migration: Migration = {
  version: 15,
  name: 'seat_leases',
  up: ({ ts }) => `
ALTER TABLE seats ADD COLUMN lease_until ${ts};
UPDATE seats SET lease_until = expires_at;
`,
};
