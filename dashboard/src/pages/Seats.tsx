/**
 * Live floating seats of an application (issue 25), soonest to end first, with their count;
 * releasing one frees its place at once (the device's next heartbeat is refused).
 */
import { useEffect, useState } from 'preact/hooks';
import { api, get } from '../api';
import { ask } from '../components/dialog';
import { ErrorBox, Section, Table, Time, useAction } from '../components/ui';
import { Link } from '../router';
import { useCan } from '../session';
import type { Seat, SeatList } from '../types';

/** The API answers at most this many seats (soonest to end first) and the total beyond them. */
const SHOWN = 100;

export function Seats({ appId }: { appId: string }) {
  const canAct = useCan('users');
  const [list, setList] = useState<SeatList | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [tick, setTick] = useState(0);
  const row = useAction();

  useEffect(() => {
    get<SeatList>(`/apps/${appId}/seats?limit=${SHOWN}`).then((l) => { setList(l); setError(null); }, setError);
  }, [appId, tick]);

  const release = async (seat: Seat) => {
    const ok = await ask({ title: 'Release this seat?', confirmLabel: 'Release seat', body: <p>The seat of device <code>{seat.hardware_id}</code> is freed; that device must check out again.</p> });
    if (ok && (await row.run(() => api('DELETE', `/apps/${appId}/seats/${seat.id}`), 'Seat released'))) setTick((n) => n + 1);
  };

  return (
    <>
      <h1>Live seats</h1>
      <p class="muted">Seats per user are set in the application’s <Link href={`/apps/${appId}/settings`}>settings</Link> or by a license template.</p>
      <Section title="Seats in use" actions={<button type="button" class="secondary" onClick={() => setTick((n) => n + 1)}>Refresh</button>}>
        <ErrorBox error={error ?? row.error} />
        {list && <p data-testid="seat-total">{list.total === 1 ? '1 seat in use' : `${list.total.toLocaleString()} seats in use`}{list.total > list.items.length && `; the ${list.items.length} ending soonest are shown`}.</p>}
        {!list && !error && <p role="status">Loading…</p>}
        {list && (
          <Table caption="Live seats" empty={list.items.length === 0}>
            <thead><tr><th scope="col">User</th><th scope="col">Hardware id</th><th scope="col">Checked out</th><th scope="col">Last heartbeat</th><th scope="col">Ends</th>{canAct && <th scope="col"><span class="visually-hidden">Actions</span></th>}</tr></thead>
            <tbody>
              {list.items.map((seat) => (
                <tr key={seat.id}>
                  <td><Link href={`/apps/${appId}/users/${seat.user_id}`} class="mono">{seat.user_id.slice(0, 8)}…</Link></td>
                  <td class="mono">{seat.hardware_id}</td>
                  <td><Time at={seat.checked_out_at} /></td>
                  <td><Time at={seat.last_heartbeat_at} /></td>
                  <td><Time at={seat.expires_at} /></td>
                  {canAct && <td><button type="button" class="secondary" onClick={() => release(seat)} aria-label={`Release the seat of ${seat.hardware_id}`}>Release</button></td>}
                </tr>
              ))}
            </tbody>
          </Table>
        )}
      </Section>
    </>
  );
}
