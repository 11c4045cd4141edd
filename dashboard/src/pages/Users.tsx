import { useEffect, useState } from 'preact/hooks';
import { api, get, query, type Page } from '../api';
import { ask } from '../components/dialog';
import { ErrorBox, PAGE_SIZE, Pager, Section, Table, Time, useAction, usePaged, when } from '../components/ui';
import { Link, navigate } from '../router';
import { useCan } from '../session';
import type { Ban, Membership, Seat, UserDetailRecord, UserSummary } from '../types';
import { minutesText } from './Licenses';

export function MembershipBadge({ membership }: { membership: Membership }) {
  if (membership.is_lifetime) return <span class="badge ok">lifetime</span>;
  if (membership.is_active) return <span class="badge ok">active until {when(membership.active_until)}</span>;
  return <span class="badge bad">{membership.active_until ? `expired ${when(membership.active_until)}` : 'inactive'}</span>;
}

export function Users({ appId }: { appId: string }) {
  const [typed, setTyped] = useState('');
  const [search, setSearch] = useState('');
  // Search as the operator types, but not on every keystroke.
  useEffect(() => {
    const timer = setTimeout(() => setSearch(typed.trim()), 250);
    return () => clearTimeout(timer);
  }, [typed]);
  const paged = usePaged((cursor) => get<Page<UserSummary>>(`/apps/${appId}/users` + query({ q: search, limit: PAGE_SIZE, cursor, with_total: true })), appId + '\u0000' + search);

  return (
    <>
      <h1>Users</h1>
      <Section title="Find a user">
        <form class="inline-form" role="search" onSubmit={(e) => { e.preventDefault(); setSearch(typed.trim()); }}>
          <label class="field">
            <span>Username or user id</span>
            <input type="search" name="q" maxLength={128} value={typed} onInput={(e) => setTyped(e.currentTarget.value)} />
          </label>
          <button type="submit">Search</button>
        </form>
        <ErrorBox error={paged.error} />
        <Table caption="Users" empty={!paged.loading && paged.items.length === 0}>
          <thead><tr><th scope="col">Username</th><th scope="col">Membership</th><th scope="col" class="num">Devices</th><th scope="col">Signed up</th></tr></thead>
          <tbody>
            {paged.items.map((u) => (
              <tr key={u.id}>
                <td><Link href={`/apps/${appId}/users/${u.id}`}>{u.username}</Link></td>
                <td><MembershipBadge membership={u.membership} /></td>
                <td class="num">{u.device_count}</td>
                <td><Time at={u.created_at} /></td>
              </tr>
            ))}
          </tbody>
        </Table>
        <Pager paged={paged} noun="users" />
      </Section>
    </>
  );
}

async function userBans(appId: string, user: UserDetailRecord): Promise<Ban[]> {
  if (user.bans) return user.bans;
  const page = await get<Page<Ban>>(`/apps/${appId}/bans` + query({ type: 'user', value: user.id, limit: 100 }));
  return page.items.filter((b) => b.value === user.id);
}

export function UserDetail({ appId, userId }: { appId: string; userId: string }) {
  const canAct = useCan('users');
  const canDelete = useCan('delete_users');
  const canBan = useCan('bans');
  const [user, setUser] = useState<UserDetailRecord | null>(null);
  const [bans, setBans] = useState<Ban[]>([]);
  const [loadError, setLoadError] = useState<unknown>(null);
  const [tick, setTick] = useState(0);
  const [days, setDays] = useState(30);
  const [reason, setReason] = useState('');
  const action = useAction();

  useEffect(() => {
    get<UserDetailRecord>(`/apps/${appId}/users/${userId}`).then(async (u) => {
      setUser(u);
      setLoadError(null);
      setBans(await userBans(appId, u).catch(() => []));
    }, setLoadError);
  }, [appId, userId, tick]);

  if (loadError) return <><h1>User</h1><ErrorBox error={loadError} /><p><Link href={`/apps/${appId}/users`}>Back to the users</Link></p></>;
  if (!user) return <p role="status">Loading…</p>;
  const reload = () => setTick((n) => n + 1);
  const base = `/apps/${appId}/users/${userId}`;
  const name = <strong>{user.username}</strong>;

  const act = async (title: string, body: preact.ComponentChildren, label: string, work: () => Promise<unknown>, done: string, danger = true) => {
    if (!(await ask({ title, body, confirmLabel: label, danger }))) return false;
    if (!(await action.run(work, done))) return false;
    reload();
    return true;
  };

  const extend = (event: Event) => {
    event.preventDefault();
    const minutes = Math.round(days * 1440);
    void act('Extend the membership?', <p>Add {minutesText(minutes)} to {name}'s membership (from now if it has ended).</p>, 'Extend',
      () => api('PATCH', base, { extend_minutes: minutes }), `Extended by ${minutesText(minutes)}`, false);
  };
  const lifetime = (grant: boolean) =>
    act(grant ? 'Grant lifetime access?' : 'Remove lifetime access?',
      <p>{grant ? <>Give {name} access with no end.</> : <>{name} keeps only the time left on the membership.</>}</p>,
      grant ? 'Grant lifetime' : 'Remove lifetime', () => api('PATCH', base, { lifetime: grant }), grant ? 'Lifetime granted' : 'Lifetime removed', !grant);
  const resetDevices = () =>
    act('Reset devices?', <p>{name} forgets all {user.devices.length} devices and is signed out everywhere; the next device to sign in is bound.</p>,
      'Reset devices', () => api('POST', `${base}/reset-devices`), 'Devices reset');
  const releaseSeat = (seat: Seat) =>
    act('Release this seat?', <p>The device {seat.hardware_id} loses its seat at its next heartbeat, and another device of {name} may take it.</p>,
      'Release seat', () => api('DELETE', `/apps/${appId}/seats/${seat.id}`), 'Seat released');
  const revokeSessions = () =>
    act('Sign out everywhere?', <p>End all {user.sessions.length} live sessions of {name}.</p>, 'Revoke sessions',
      () => api('POST', `${base}/revoke-sessions`), 'Sessions revoked');
  const ban = (event: Event) => {
    event.preventDefault();
    void act('Ban this user?', <p>{name} is refused at once by every client endpoint{reason ? <> (reason: {reason})</> : null}.</p>, 'Ban user',
      () => api('POST', `/apps/${appId}/bans`, { type: 'user', value: user.id, ...(reason && { reason }) }), 'User banned')
      // The reason belonged to that ban: the form shown again after Unban starts empty.
      .then((banned) => banned && setReason(''));
  };
  const unban = () =>
    act('Lift the ban?', <p>{name} gets access back at once.</p>, 'Unban',
      () => Promise.all(bans.map((b) => api('DELETE', `/apps/${appId}/bans/${b.id}`))), 'Ban lifted', false);
  const remove = async () => {
    if (!(await ask({ title: `Delete ${user.username}?`, confirmLabel: 'Delete user', body: <p>This deletes {name} with their devices, sessions and history. Their used licenses stay used. It cannot be undone.</p> }))) return;
    if (await action.run(() => api('DELETE', base), `Deleted ${user.username}`)) navigate(`/apps/${appId}/users`);
  };

  return (
    <>
      <p><Link href={`/apps/${appId}/users`}>← Users</Link></p>
      <h1>{user.username} {bans.length > 0 && <span class="badge bad" data-testid="banned">banned</span>}</h1>
      <ErrorBox error={action.error} />
      <Section title="Membership">
        <dl class="facts">
          <dt>Status</dt><dd data-testid="membership"><MembershipBadge membership={user.membership} /></dd>
          <dt>User id</dt><dd class="mono">{user.id}</dd>
          <dt>Signed up</dt><dd><Time at={user.created_at} /></dd>
          <dt>Password</dt><dd>{user.password_set ? 'set' : 'none (license-only user)'}</dd>
          {user.self_resets && (
            <><dt>Own device resets</dt><dd data-testid="self-resets">{user.self_resets.count}{user.self_resets.last_at ? <>, last <Time at={user.self_resets.last_at} /></> : null}</dd></>
          )}
          {bans.map((b) => <><dt>Ban</dt><dd>{b.reason ?? 'no reason given'}{b.expires_at ? <>, until <Time at={b.expires_at} /></> : ', no end'}</dd></>)}
        </dl>
        {canAct && (
          <>
            <form class="inline-form" onSubmit={extend}>
              <label class="field">
                <span>Extend by (days)</span>
                <input name="extend-days" type="number" min={0.0007} step="any" required value={days} onInput={(e) => setDays(e.currentTarget.valueAsNumber)} />
              </label>
              <button type="submit" disabled={action.busy}>Extend</button>
              {user.membership.is_lifetime
                ? <button type="button" class="secondary" onClick={() => lifetime(false)}>Remove lifetime</button>
                : <button type="button" class="secondary" onClick={() => lifetime(true)}>Grant lifetime</button>}
            </form>
          </>
        )}
      </Section>
      {(canAct || canBan) && (
        <Section title="Actions">
          <div class="actions start">
            {canAct && <button type="button" class="secondary" onClick={resetDevices}>Reset devices</button>}
            {canAct && <button type="button" class="secondary" onClick={revokeSessions}>Revoke sessions</button>}
            {canDelete && <button type="button" class="danger" onClick={remove}>Delete user</button>}
          </div>
          {canBan && (bans.length > 0 ? (
            <div class="actions start"><button type="button" class="secondary" onClick={unban}>Unban</button></div>
          ) : (
            <form class="inline-form" onSubmit={ban}>
              <label class="field">
                <span>Ban reason (optional)</span>
                <input name="ban-reason" maxLength={512} value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
              </label>
              <button type="submit" class="danger">Ban user</button>
            </form>
          ))}
        </Section>
      )}
      <Section title={`Devices (${user.devices.length})`}>
        <Table caption="Devices" empty={user.devices.length === 0}>
          <thead><tr><th scope="col">Hardware id</th><th scope="col">First seen</th><th scope="col">Last seen</th></tr></thead>
          <tbody>{user.devices.map((d) => <tr key={d.id}><td class="mono">{d.hardware_id}</td><td><Time at={d.created_at} /></td><td><Time at={d.last_seen_at} /></td></tr>)}</tbody>
        </Table>
      </Section>
      {user.seats && (
        <Section title={`Live seats (${user.seats.length})`}>
          <Table caption="Seats" empty={user.seats.length === 0}>
            <thead><tr><th scope="col">Hardware id</th><th scope="col">Checked out</th><th scope="col">Last heartbeat</th><th scope="col">Dies at</th>{canAct && <th scope="col"><span class="visually-hidden">Actions</span></th>}</tr></thead>
            <tbody>
              {user.seats.map((seat) => (
                <tr key={seat.id} data-testid="seat">
                  <td class="mono">{seat.hardware_id}</td><td><Time at={seat.checked_out_at} /></td><td><Time at={seat.last_heartbeat_at} /></td><td><Time at={seat.expires_at} /></td>
                  {canAct && <td><button type="button" class="secondary" onClick={() => releaseSeat(seat)}>Release</button></td>}
                </tr>
              ))}
            </tbody>
          </Table>
        </Section>
      )}
      <Section title={`Live sessions (${user.sessions.length})`}>
        <Table caption="Sessions" empty={user.sessions.length === 0}>
          <thead><tr><th scope="col">Started</th><th scope="col">Expires</th><th scope="col">IP</th><th scope="col">Hardware id</th></tr></thead>
          <tbody>{user.sessions.map((s) => <tr key={s.id}><td><Time at={s.created_at} /></td><td><Time at={s.expires_at} /></td><td class="mono">{s.ip ?? '—'}</td><td class="mono">{s.hardware_id ?? '—'}</td></tr>)}</tbody>
        </Table>
      </Section>
      <Section title="IP history">
        <Table caption="IP addresses" empty={user.ips.length === 0}>
          <thead><tr><th scope="col">IP</th><th scope="col" class="num">Requests</th><th scope="col">First seen</th><th scope="col">Last seen</th></tr></thead>
          <tbody>{user.ips.map((ip) => <tr key={ip.ip}><td class="mono">{ip.ip}</td><td class="num">{ip.count}</td><td><Time at={ip.first_seen_at} /></td><td><Time at={ip.last_seen_at} /></td></tr>)}</tbody>
        </Table>
      </Section>
      <Section title="License activations">
        <Table caption="Activations" empty={user.activations.length === 0}>
          <thead><tr><th scope="col">When</th><th scope="col">Grants</th><th scope="col">License</th></tr></thead>
          <tbody>
            {user.activations.map((a) => (
              <tr key={a.id}>
                <td><Time at={a.occurred_at} /></td>
                <td>{a.grants_lifetime_access ? 'lifetime' : a.revokes_lifetime_access ? 'revokes lifetime' : a.minutes ? minutesText(a.minutes) : '—'}</td>
                <td class="mono">{a.license_id}</td>
              </tr>
            ))}
          </tbody>
        </Table>
      </Section>
    </>
  );
}
