import { useState } from 'preact/hooks';
import { api, get, query, type Page } from '../api';
import { ask, reveal } from '../components/dialog';
import { ErrorBox, isoFromLocal, PAGE_SIZE, Pager, Section, Table, Time, useAction, usePaged } from '../components/ui';
import { useCan } from '../session';

interface Endpoint {
  id: string;
  url: string;
  kind: 'standard' | 'discord';
  event_types: string[] | null;
  description: string;
  enabled: boolean;
  disabled_reason: string | null;
  failing_since: string | null;
  previous_secret_until: string | null;
  created_at: string;
}

interface Delivery {
  id: string;
  event_id: string;
  event_type: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  next_attempt_at: string | null;
  last_status: number | null;
  created_at: string;
  attempt_log: { at: string; status: number | null; error: string | null; body: string | null; duration_ms: number }[];
}

/** An app's webhook endpoints (docs/webhooks.md): add, enable or disable, test, rotate, delete; and each one's delivery log with replay. */
export function Webhooks({ appId }: { appId: string }) {
  const canWrite = useCan('apps');
  const base = `/apps/${appId}/webhooks`;
  const paged = usePaged((cursor) => get<Page<Endpoint>>(base + query({ limit: PAGE_SIZE, cursor })), appId);
  const [url, setUrl] = useState('');
  const [types, setTypes] = useState('');
  const [kind, setKind] = useState<'standard' | 'discord'>('standard');
  const [description, setDescription] = useState('');
  const [open, setOpen] = useState<string | null>(null);
  const create = useAction();
  const row = useAction();

  const submit = async (event: Event) => {
    event.preventDefault();
    const eventTypes = types.split(',').map((t) => t.trim()).filter(Boolean);
    const body = { url: url.trim(), kind, ...(description && { description }), ...(eventTypes.length > 0 && { event_types: eventTypes }) };
    let secret = '';
    if (await create.run(async () => { secret = (await api<{ secret: string }>('POST', base, body)).secret; }, 'Endpoint added')) {
      setUrl('');
      setTypes('');
      setDescription('');
      paged.reload();
      await reveal('Webhook endpoint added', 'Signing secret', secret, <>Shown <strong>only now</strong>. The receiver verifies each delivery with it (Standard Webhooks).</>);
    }
  };
  const toggle = async (e: Endpoint) => {
    if (await row.run(() => api('PATCH', `${base}/${e.id}`, { enabled: !e.enabled }), e.enabled ? 'Endpoint disabled' : 'Endpoint enabled')) paged.reload();
  };
  const test = async (e: Endpoint) => {
    if (await row.run(() => api('POST', `${base}/${e.id}/test`), 'Test event queued')) setOpen(e.id);
  };
  const rotate = async (e: Endpoint) => {
    if (!(await ask({ title: 'Rotate the secret?', confirmLabel: 'Rotate', body: <p>The old secret keeps signing beside the new one for 24 hours.</p> }))) return;
    let secret = '';
    if (await row.run(async () => { secret = (await api<{ secret: string }>('POST', `${base}/${e.id}/secret`)).secret; })) {
      paged.reload();
      await reveal('New signing secret', 'Signing secret', secret, <>Shown <strong>only now</strong>; the old one still signs for 24 hours.</>);
    }
  };
  const remove = async (e: Endpoint) => {
    if (!(await ask({ title: 'Delete this endpoint?', confirmLabel: 'Delete', body: <p><code>{e.url}</code> and its delivery log go.</p> }))) return;
    if (await row.run(() => api('DELETE', `${base}/${e.id}`), 'Endpoint deleted')) paged.reload();
  };

  return (
    <>
      <h1>Webhooks</h1>
      {canWrite && (
        <Section title="New endpoint">
          <form onSubmit={submit} class="grid-form">
            <label class="field">
              <span>URL (https)</span>
              <input name="webhook-url" required maxLength={2048} placeholder="https://crm.example.com/hooks/tollgate" value={url} onInput={(e) => setUrl(e.currentTarget.value)} />
            </label>
            <label class="field">
              <span>Event types (comma-separated; empty: all)</span>
              <input name="webhook-types" placeholder="user.created, license.redeemed" value={types} onInput={(e) => setTypes(e.currentTarget.value)} />
            </label>
            <label class="field">
              <span>Kind</span>
              <select name="webhook-kind" value={kind} onChange={(e) => setKind(e.currentTarget.value as 'standard' | 'discord')}>
                <option value="standard">Standard Webhooks JSON</option>
                <option value="discord">Discord (embeds)</option>
              </select>
            </label>
            <label class="field">
              <span>Description (optional)</span>
              <input name="webhook-description" maxLength={500} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
            </label>
            <div class="actions start"><button type="submit" disabled={create.busy}>Add endpoint</button></div>
          </form>
          <ErrorBox error={create.error} />
        </Section>
      )}
      <Section title="Endpoints">
        <ErrorBox error={paged.error ?? row.error} />
        <Table caption="Webhook endpoints" empty={!paged.loading && paged.items.length === 0}>
          <thead><tr><th scope="col">URL</th><th scope="col">Events</th><th scope="col">Status</th><th scope="col">Failing since</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
          <tbody>
            {paged.items.map((e) => (
              <tr key={e.id}>
                <td class="mono">{e.url}{e.kind === 'discord' && <> <span class="badge">discord</span></>}{e.description && <div class="muted">{e.description}</div>}</td>
                <td>{e.event_types ? e.event_types.join(', ') : 'all'}</td>
                <td>{e.enabled ? <span class="badge ok">enabled</span> : <span class="badge bad" title={e.disabled_reason ?? 'disabled by an operator'}>disabled{e.disabled_reason ? `: ${e.disabled_reason}` : ''}</span>}</td>
                <td><Time at={e.failing_since} never="—" /></td>
                <td>
                  <button type="button" class="secondary" onClick={() => setOpen(open === e.id ? null : e.id)} aria-label={`Deliveries to ${e.url}`}>Deliveries</button>
                  {canWrite && (
                    <>
                      {' '}<button type="button" class="secondary" onClick={() => toggle(e)}>{e.enabled ? 'Disable' : 'Enable'}</button>
                      {' '}{e.enabled && <button type="button" class="secondary" onClick={() => test(e)}>Send test</button>}
                      {' '}<button type="button" class="secondary" onClick={() => rotate(e)}>Rotate secret</button>
                      {' '}<button type="button" class="secondary" onClick={() => remove(e)}>Delete</button>
                    </>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </Table>
        <Pager paged={paged} noun="endpoints" />
      </Section>
      {open && <DeliveryLog base={`${base}/${open}`} canWrite={canWrite} />}
    </>
  );
}

function DeliveryLog({ base, canWrite }: { base: string; canWrite: boolean }) {
  const [status, setStatus] = useState('');
  const paged = usePaged((cursor) => get<Page<Delivery>>(`${base}/deliveries` + query({ status, limit: PAGE_SIZE, cursor })), base + status);
  const [since, setSince] = useState('');
  const row = useAction();
  const replay = async (d: Delivery) => {
    if (await row.run(() => api('POST', `${base}/deliveries/${d.id}/replay`), 'Delivery queued again')) paged.reload();
  };
  const replayFailed = async (event: Event) => {
    event.preventDefault();
    const from = isoFromLocal(since);
    if (!from) return;
    let n = 0;
    if (await row.run(async () => { n = (await api<{ replayed: number }>('POST', `${base}/replay`, { since: from })).replayed; })) {
      paged.reload();
      row.clear();
      await ask({ title: 'Failed deliveries queued again', confirmLabel: 'OK', danger: false, body: <p>{n} deliveries will be sent again.</p> });
    }
  };
  const label = (d: Delivery) => (d.status === 'delivered' ? <span class="badge ok">delivered</span> : d.status === 'failed' ? <span class="badge bad">failed</span> : <span class="badge">pending</span>);
  return (
    <Section title="Delivery log" actions={<button type="button" class="secondary" onClick={() => paged.reload()}>Refresh</button>}>
      <form class="inline-form" onSubmit={replayFailed}>
        <label class="field">
          <span>Show</span>
          <select value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
            <option value="">Every delivery</option><option value="pending">Pending</option><option value="delivered">Delivered</option><option value="failed">Failed</option>
          </select>
        </label>
        {canWrite && (
          <>
            <label class="field">
              <span>Replay every failure since</span>
              <input type="datetime-local" name="replay-since" value={since} onInput={(e) => setSince(e.currentTarget.value)} />
            </label>
            <button type="submit" class="secondary" disabled={!since}>Replay failures</button>
          </>
        )}
      </form>
      <ErrorBox error={paged.error ?? row.error} />
      <Table caption="Deliveries" empty={!paged.loading && paged.items.length === 0}>
        <thead><tr><th scope="col">Event</th><th scope="col">Status</th><th scope="col">Attempts and answers</th><th scope="col">Next attempt</th>{canWrite && <th scope="col"><span class="visually-hidden">Actions</span></th>}</tr></thead>
        <tbody>
          {paged.items.map((d) => (
            <tr key={d.id}>
              <td>{d.event_type}<div class="muted mono">{d.event_id}</div><Time at={d.created_at} /></td>
              <td>{label(d)}</td>
              <td>
                {d.attempt_log.map((a) => (
                  <details>
                    <summary><Time at={a.at} />: {a.status ?? 'no answer'} ({a.duration_ms} ms)</summary>
                    <pre class="mono">{a.error ?? a.body ?? ''}</pre>
                  </details>
                ))}
              </td>
              <td><Time at={d.next_attempt_at} never="—" /></td>
              {canWrite && <td>{d.status !== 'pending' && <button type="button" class="secondary" onClick={() => replay(d)}>Replay</button>}</td>}
            </tr>
          ))}
        </tbody>
      </Table>
      <Pager paged={paged} noun="deliveries" />
    </Section>
  );
}
