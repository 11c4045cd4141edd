/**
 * Floating seats (issue 25): the background heartbeat of a checked-out seat.
 * It beats at a third of the interval the server gave (heartbeat_seconds, or a
 * third of the time left when that is shorter), retries a failed beat before the
 * seat expires, and reports the seat lost on a verified 404 seat_not_found, a
 * verified 409, or when the expiry passes with no beat through. Time left is
 * measured on the monotonic clock from when the answer's request was sent, so a
 * wrong or changed wall clock neither loses nor keeps a seat.
 */
import { TollgateSeatLostError, type SeatLostReason } from './errors.js';
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
export declare const HEARTBEAT_FRACTION: number;
export interface Timers {
    setTimeout(fn: () => void, ms: number): unknown;
    clearTimeout(handle: unknown): void;
}
export declare const realTimers: Timers;
export declare const seatOf: (a: SeatAnswer) => Seat;
/** A verified refusal that says the seat is gone: 404 seat_not_found, or any 409 (exhausted, not enabled). */
export declare function lostReasonOf(err: unknown): SeatLostReason | null;
export declare class Heartbeat {
    private readonly beat;
    private readonly monotonic;
    private readonly onLost;
    private readonly onBeat;
    private readonly timers;
    private timer;
    private stopped;
    /** Monotonic time the seat dies at unless a beat gets through. */
    private deadline;
    private interval;
    private lastError;
    seat: Seat;
    constructor(first: SeatAnswer, sentAt: number, beat: () => Promise<{
        answer: SeatAnswer;
        sentAt: number;
    }>, monotonic: () => number, onLost: (err: TollgateSeatLostError) => void, onBeat?: (seat: Seat) => void, timers?: Timers);
    private renew;
    /** When the next beat is due (ms from now), for tests and diagnostics. */
    get intervalMs(): number;
    private schedule;
    private tick;
    private lose;
    stop(): void;
}
