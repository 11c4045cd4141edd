/**
 * Trials (issue 24): one per device (and email), listed by status; resetting one lets that device
 * start a new trial. The list is the server's, a page at a time, with its total.
 */
import { useState } from 'preact/hooks';
import { api, get, query, type Page } from '../api';
import { ask } from '../components/dialog';
import { ErrorBox, PAGE_SIZE, Pager, Section, Table, Time, useAction, usePaged } from '../components/ui';
import { Link } from '../router';
import { useCan } from '../session';
import type { Trial } from '../types';

export function Trials({ appId }: { appId: string }) {
  const canAct = useCan('users');
  const [status, setStatus] = useState('');
  const [hardware, setHardware] = useState('');
  const [hardwareSet, setHardwareSet] = useState('');
  const filters = { status, hardware_id: hardwareSet };
  const paged = usePaged((cursor) => get<Page<Trial>>(`/apps/${appId}/trials` + query({ ...filters, limit: PAGE_SIZE, cursor, with_total: true })), JSON.stringify([appId, filters]));
  const row = useAction();

  const reset = async (trial: Trial) => {
    const ok = await ask({
      title: 'Reset this trial?', confirmLabel: 'Reset trial',
      body: <p>The trial started <strong>{new Date(trial.started_at).toLocaleString()}</strong> is forgotten: its device{trial.email_key ? <> and <code>{trial.email_key}</code></> : null} may start a new one.</p>,
    });
    if (ok && (await row.run(() => api('DELETE', `/apps/${appId}/trials/${trial.id}`), 'Trial reset'))) paged.reload();
  };

  return (
    <>
      <h1>Trials</h1>
      <p class="muted">Trials are set up in the application’s <Link href={`/apps/${appId}/settings`}>settings</Link> (length, entitlements, refused email domains).</p>
      <Section title="Trials">
        <form class="inline-form" onSubmit={(e) => { e.preventDefault(); setHardwareSet(hardware.trim()); }} aria-label="Filter trials">
          <label class="field">
            <span>Status</span>
            <select name="trial-status" value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
              <option value="">All</option>
              <option value="running">Running</option>
              <option value="ended">Ended</option>
              <option value="converted">Converted</option>
            </select>
          </label>
          <label class="field">
            <span>Hardware id</span>
            <input name="trial-hardware" type="search" maxLength={256} value={hardware} onInput={(e) => setHardware(e.currentTarget.value)} />
          </label>
          <button type="submit" class="secondary">Find</button>
        </form>
        <ErrorBox error={paged.error ?? row.error} />
        <Table caption="Trials" empty={!paged.loading && paged.items.length === 0}>
          <thead><tr><th scope="col">Status</th><th scope="col">Started</th><th scope="col">Ends</th><th scope="col">User</th><th scope="col">Email</th><th scope="col">Device (hash)</th>{canAct && <th scope="col"><span class="visually-hidden">Actions</span></th>}</tr></thead>
          <tbody>
            {paged.items.map((t) => (
              <tr key={t.id}>
                <td><span class={t.status === 'running' ? 'badge ok' : t.status === 'converted' ? 'badge' : 'badge bad'}>{t.status}</span>{t.converted_at && <> <Time at={t.converted_at} /></>}</td>
                <td><Time at={t.started_at} /></td>
                <td><Time at={t.ends_at} /></td>
                <td>{t.user_id ? <Link href={`/apps/${appId}/users/${t.user_id}`}>user</Link> : 'deleted'}</td>
                <td>{t.email_key ?? '—'}</td>
                <td class="mono" title={t.hwid_hash}>{t.hwid_hash.slice(0, 12)}…</td>
                {canAct && <td><button type="button" class="secondary" onClick={() => reset(t)} aria-label={`Reset the trial started ${new Date(t.started_at).toLocaleString()}`}>Reset</button></td>}
              </tr>
            ))}
          </tbody>
        </Table>
        <Pager paged={paged} noun="trials" />
      </Section>
    </>
  );
}
