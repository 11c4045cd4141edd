/**
 * The event outbox (issue 23), newest first: one application's events (/apps/:app/events) or every
 * application's (/events), filtered by type and time on the server.
 */
import { useState } from 'preact/hooks';
import { get, query, type Page } from '../api';
import { ErrorBox, isoFromLocal, PAGE_SIZE, Pager, Section, Table, Time, useDebounced, usePaged } from '../components/ui';
import { Link } from '../router';
import type { OutboxEvent } from '../types';

export function Events({ appId }: { appId?: string }) {
  const [type, setType] = useState('');
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const typeSettled = useDebounced(type.replace(/\s+/g, ''));
  const filters = { app_id: appId, type: typeSettled, from: isoFromLocal(from), to: isoFromLocal(to) };
  const paged = usePaged((cursor) => get<Page<OutboxEvent>>('/events' + query({ ...filters, limit: PAGE_SIZE, cursor })), JSON.stringify(filters));

  return (
    <>
      <h1>{appId ? 'Events' : 'Events of every application'}</h1>
      <p class="muted">What happened, as webhook endpoints receive it. <Link href={appId ? `/apps/${appId}/webhooks` : '/webhooks'}>Webhook endpoints</Link></p>
      <Section title="Events">
        <form class="inline-form" onSubmit={(e) => e.preventDefault()} aria-label="Filter events">
          <label class="field">
            <span>Type (one, or several comma-separated)</span>
            <input name="event-type" type="search" maxLength={1000} value={type} onInput={(e) => setType(e.currentTarget.value)} placeholder="user.created" />
          </label>
          <label class="field">
            <span>From</span>
            <input type="datetime-local" value={from} onInput={(e) => setFrom(e.currentTarget.value)} />
          </label>
          <label class="field">
            <span>Before</span>
            <input type="datetime-local" value={to} onInput={(e) => setTo(e.currentTarget.value)} />
          </label>
        </form>
        <ErrorBox error={paged.error} />
        <Table caption="Events" empty={!paged.loading && paged.items.length === 0}>
          <thead><tr><th scope="col">When</th><th scope="col">Type</th>{!appId && <th scope="col">Application</th>}<th scope="col">Data</th></tr></thead>
          <tbody>
            {paged.items.map((e) => (
              <tr key={e.id}>
                <td><Time at={e.occurred_at} /></td>
                <td class="mono">{e.type}</td>
                {!appId && <td>{e.app_id ? <Link href={`/apps/${e.app_id}/events`} class="mono">{e.app_id}</Link> : 'service'}</td>}
                <td>
                  <details>
                    <summary>Data</summary>
                    <pre class="answer">{JSON.stringify(e.data, null, 2)}</pre>
                  </details>
                </td>
              </tr>
            ))}
          </tbody>
        </Table>
        <Pager paged={paged} noun="events" />
      </Section>
    </>
  );
}
