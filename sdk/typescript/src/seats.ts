/**
 * Floating seats (issue 25): the background heartbeat of a checked-out seat.
 * It beats at a third of the interval the server gave (heartbeat_seconds, or a
 * third of the time left when that is shorter), retries a failed beat before the
 * seat expires, and reports the seat lost on a verified 404 seat_not_found, a
 * verified 409, or when the expiry passes with no beat through. Time left is
 * measured on the monotonic clock from when the answer's request was sent, so a
 * wrong or changed wall clock neither loses nor keeps a seat.
 */
import { TollgateError, TollgateSeatLostError, type SeatLostReason, type TollgateException } from './errors.js';

import type { SeatCheckout } from './api-types.js';

/** A seat as POST /seats and POST /seats/heartbeat answer it. */
export type SeatAnswer = SeatCheckout;

/** The seat this client holds, as last confirmed by the server. */
export interface Seat {
  id: string;
  checkedOutAt: string;
  /** Server time (ISO-8601) the seat dies at without a heartbeat. */
  expiresAt: string;
  heartbeatSeconds: number;
  /** The user's pool when last answered. */
  max: number;
  inUse: number;
}

export type SeatState = 'none' | 'held' | 'lost';

/** The share of heartbeat_seconds between beats: three beats per interval, so two may fail before the seat is at risk. */
export const HEARTBEAT_FRACTION = 1 / 3;

export interface Timers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const realTimers: Timers = {
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms);
    // The heartbeat alone never keeps the process running: its exit releases the seat (client.ts) instead.
    (t as { unref?: () => void }).unref?.();
    return t;
  },
  clearTimeout: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
};

export const seatOf = (a: SeatAnswer): Seat => ({
  id: a.seat.id, checkedOutAt: a.seat.checked_out_at, expiresAt: a.seat.expires_at, heartbeatSeconds: a.seat.heartbeat_seconds, max: a.seats.max, inUse: a.seats.in_use,
});

/** The time the seat has left per this answer (ms): its expires_at minus the answer's server_time. */
const ttlOf = (a: SeatAnswer): number => Math.max(0, Date.parse(a.seat.expires_at) - Date.parse(a.server_time));

/** A verified refusal that says the seat is gone: 404 seat_not_found, or any 409 (exhausted, not enabled). */
export function lostReasonOf(err: unknown): SeatLostReason | null {
  if (!(err instanceof TollgateError)) return null;
  if (err.status === 404 && err.code === 'seat_not_found') return 'seat_not_found';
  if (err.status === 409) return 'conflict';
  return null;
}

export class Heartbeat {
  private timer: unknown = undefined;
  private stopped = false;
  /** Monotonic time the seat dies at unless a beat gets through. */
  private deadline = 0;
  private interval = 0;
  private lastError: TollgateException | null = null;
  seat: Seat;

  constructor(
    first: SeatAnswer,
    sentAt: number,
    private readonly beat: () => Promise<{ answer: SeatAnswer; sentAt: number }>,
    private readonly monotonic: () => number,
    private readonly onLost: (err: TollgateSeatLostError) => void,
    private readonly onBeat: (seat: Seat) => void = () => {},
    private readonly timers: Timers = realTimers,
  ) {
    this.seat = seatOf(first);
    this.renew(first, sentAt);
  }

  private renew(a: SeatAnswer, sentAt: number): void {
    const ttl = ttlOf(a);
    this.deadline = sentAt + ttl;
    this.interval = Math.max(1, Math.min(a.seat.heartbeat_seconds * 1000, ttl) * HEARTBEAT_FRACTION);
    this.seat = seatOf(a);
    this.lastError = null;
    this.schedule(this.interval);
  }

  /** When the next beat is due (ms from now), for tests and diagnostics. */
  get intervalMs(): number {
    return this.interval;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timers.clearTimeout(this.timer);
    this.timer = this.timers.setTimeout(() => void this.tick(), ms);
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    if (this.monotonic() >= this.deadline) return this.lose('expired', this.lastError);
    try {
      const { answer, sentAt } = await this.beat();
      if (this.stopped) return;
      if (answer.seat.id !== this.seat.id) return this.lose('seat_not_found', null);
      this.renew(answer, sentAt);
      this.onBeat(this.seat);
    } catch (err) {
      if (this.stopped) return;
      const reason = lostReasonOf(err);
      if (reason !== null) return this.lose(reason, err as TollgateException);
      this.lastError = err as TollgateException;
      const left = this.deadline - this.monotonic();
      if (left <= 0) return this.lose('expired', this.lastError);
      // Again soon, and once more at the deadline at the latest (which then reports the seat expired).
      this.schedule(Math.min(left, Math.max(this.interval / 4, left / 3)));
    }
  }

  private lose(reason: SeatLostReason, cause: TollgateException | null): void {
    this.stop();
    this.onLost(new TollgateSeatLostError(reason, this.seat.id, cause));
  }

  stop(): void {
    this.stopped = true;
    this.timers.clearTimeout(this.timer);
    this.timer = undefined;
  }
}
