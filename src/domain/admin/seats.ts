import { DomainError } from '../errors.js';
import { events } from '../events.js';
import { iso } from '../membership.js';
import type { Services } from '../services.js';
import { seatData, viewSeat, type SeatView } from '../seats.js';
import { write } from '../unit-of-work.js';
import { getApp } from './apps.js';
import type { AdminServices } from './audit.js';

/** The app's live seats, soonest to end first (at most `limit`), and how many there are in all. */
export async function listAppSeats(s: Services, appId: string, limit: number): Promise<{ items: SeatView[]; total: number }> {
  await getApp(s, appId);
  const { items, total } = await s.store.seats.liveOfApp(appId, s.clock(), limit);
  return { items: items.map(viewSeat), total };
}

export async function listUserSeats(s: Services, appId: string, userId: string): Promise<{ items: SeatView[]; total: number }> {
  await getApp(s, appId);
  const user = await s.store.users.findById(appId, userId);
  if (!user) throw new DomainError('not_found', 'User not found');
  const items = (await s.store.seats.liveOfUser(userId, s.clock())).map(viewSeat);
  return { items, total: items.length };
}

/** The operator frees one seat: its device's next heartbeat is 404 seat_not_found (the SDK reports the seat lost). */
export async function releaseSeatById(a: AdminServices, appId: string, seatId: string): Promise<void> {
  await getApp(a, appId);
  const now = a.clock();
  const gone = await write(a, async ({ tx, audit, emit }) => {
    const seat = await tx.seats.releaseById(appId, seatId);
    if (!seat) return undefined;
    if (seat.expiresAt <= now) {
      // A dead seat is already free: found here, it is swept (and its expiry told once), and the answer is 404.
      await emit('seat.expired', appId, { seat: seatData(seat) });
      return undefined;
    }
    await audit('seat.release', appId, seat.userId, { before: viewSeat(seat) });
    await emit('seat.released', appId, { seat: seatData(seat), by: 'operator' });
    return seat;
  });
  if (!gone) throw new DomainError('not_found', 'Seat not found');
  events.seatReleased(a, { app: { id: appId }, ...(a.reqId !== undefined && { reqId: a.reqId }) }, gone.userId, gone.id, 'operator');
}
