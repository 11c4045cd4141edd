import { useState } from 'preact/hooks';
import { api, get, query, type Page } from '../api';
import { ask } from '../components/dialog';
import { ErrorBox, isoFromLocal, PAGE_SIZE, Pager, Section, Table, Time, useAction, usePaged } from '../components/ui';
import { Link } from '../router';
import { useCan } from '../session';
import type { Ban, BanType } from '../types';

const TYPES: [BanType, string, string][] = [
  ['ip', 'IP address or range', '203.0.113.7 or 203.0.113.0/24'],
  ['hardware_id', 'Hardware id', 'the device id the client sends'],
  ['license', 'License code', 'the exact code'],
  ['user', 'User id', 'a user id of this application'],
];

export function Bans({ appId }: { appId: string }) {
  const canWrite = useCan('bans');
  // support: user and device bans only; the others are not offered, nor their Lift button.
  const canAny = useCan('ban_any');
  const types = canAny ? TYPES : TYPES.filter(([t]) => t === 'user' || t === 'hardware_id');
  const mayLift = (ban: Ban) => canAny || ban.type === 'user' || ban.type === 'hardware_id';
  const [filter, setFilter] = useState('');
  const paged = usePaged((cursor) => get<Page<Ban>>(`/apps/${appId}/bans` + query({ type: filter, limit: PAGE_SIZE, cursor, with_total: true })), appId + filter);
  const [type, setType] = useState<BanType>(types[0]![0]);
  const [value, setValue] = useState('');
  const [reason, setReason] = useState('');
  const [expires, setExpires] = useState('');
  const create = useAction();
  const row = useAction();

  const submit = async (event: Event) => {
    event.preventDefault();
    const expiresAt = isoFromLocal(expires);
    const body = { type, value: value.trim(), ...(reason && { reason }), ...(expiresAt && { expires_at: expiresAt }) };
    if (await create.run(() => api('POST', `/apps/${appId}/bans`, body), 'Ban created')) {
      setValue('');
      setReason('');
      setExpires('');
      paged.reload();
    }
  };
  const remove = async (ban: Ban) => {
    if (!(await ask({ title: 'Lift this ban?', confirmLabel: 'Lift ban', body: <p>The {ban.type.replace('_', ' ')} <code>{ban.value}</code> gets access back at once.</p> }))) return;
    if (await row.run(() => api('DELETE', `/apps/${appId}/bans/${ban.id}`), 'Ban lifted')) paged.reload();
  };

  const hint = TYPES.find(([t]) => t === type)?.[2];
  return (
    <>
      <h1>Bans</h1>
      {canWrite && (
        <Section title="New ban">
          <form onSubmit={submit} class="grid-form">
            <label class="field">
              <span>What to ban</span>
              <select name="ban-type" value={type} onChange={(e) => setType(e.currentTarget.value as BanType)}>
                {types.map(([t, label]) => <option value={t}>{label}</option>)}
              </select>
            </label>
            <label class="field">
              <span>Value</span>
              <input name="ban-value" required maxLength={256} placeholder={hint} value={value} onInput={(e) => setValue(e.currentTarget.value)} />
            </label>
            <label class="field">
              <span>Reason (optional)</span>
              <input name="ban-reason" maxLength={512} value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
            </label>
            <label class="field">
              <span>Lifts itself at (optional)</span>
              <input name="ban-expires" type="datetime-local" value={expires} onInput={(e) => setExpires(e.currentTarget.value)} />
            </label>
            <div class="actions start"><button type="submit" class="danger" disabled={create.busy}>Create ban</button></div>
          </form>
          <ErrorBox error={create.error} />
        </Section>
      )}
      <Section title="Bans">
        <form class="inline-form" onSubmit={(e) => e.preventDefault()}>
          <label class="field">
            <span>Show</span>
            <select value={filter} onChange={(e) => setFilter(e.currentTarget.value)}>
              <option value="">Every kind</option>
              {TYPES.map(([t, label]) => <option value={t}>{label}</option>)}
            </select>
          </label>
        </form>
        <ErrorBox error={paged.error ?? row.error} />
        <Table caption="Bans" empty={!paged.loading && paged.items.length === 0}>
          <thead><tr><th scope="col">Kind</th><th scope="col">Value</th><th scope="col">Reason</th><th scope="col">Created</th><th scope="col">Lifts</th>{canWrite && <th scope="col"><span class="visually-hidden">Actions</span></th>}</tr></thead>
          <tbody>
            {paged.items.map((b) => (
              <tr key={b.id}>
                <td>{b.type.replace('_', ' ')}</td>
                <td class="mono">{b.type === 'user' ? <Link href={`/apps/${appId}/users/${b.value}`}>{b.value}</Link> : b.value}</td>
                <td>{b.reason ?? ''}</td>
                <td><Time at={b.created_at} /></td>
                <td><Time at={b.expires_at} never="never" /></td>
                {canWrite && <td>{mayLift(b) && <button type="button" class="secondary" onClick={() => remove(b)} aria-label={`Lift the ban on ${b.value}`}>Lift</button>}</td>}
              </tr>
            ))}
          </tbody>
        </Table>
        <Pager paged={paged} noun="bans" />
      </Section>
    </>
  );
}
