import { useEffect, useState } from 'preact/hooks';
import { get, query, type Page } from '../api';
import { ErrorBox, isoFromLocal, PAGE_SIZE, Pager, Section, Table, Time, usePaged } from '../components/ui';
import { useApps } from '../Layout';
import type { AuditEvent } from '../types';

function show(value: unknown): string {
  if (value === null || value === undefined) return '—';
  if (typeof value === 'string') return value;
  return JSON.stringify(value);
}

/** before/after pairs as "field: old → new"; anything else as key: value. */
export function Details({ details }: { details: Record<string, unknown> }) {
  const before = (details.before ?? {}) as Record<string, unknown>;
  const after = (details.after ?? {}) as Record<string, unknown>;
  const changed = [...new Set([...Object.keys(before), ...Object.keys(after)])];
  const rest = Object.entries(details).filter(([k]) => k !== 'before' && k !== 'after');
  if (changed.length === 0 && rest.length === 0) return <span class="muted">—</span>;
  return (
    <dl class="details-json">
      {changed.map((field) => (
        <>
          <dt>{field}</dt>
          <dd>{field in before && field in after ? <>{show(before[field])} → {show(after[field])}</> : field in after ? show(after[field]) : <>{show(before[field])} (removed)</>}</dd>
        </>
      ))}
      {rest.map(([key, value]) => <><dt>{key}</dt><dd>{show(value)}</dd></>)}
    </dl>
  );
}

export function Audit() {
  const { apps } = useApps();
  const [actorTyped, setActorTyped] = useState('');
  const [actionTyped, setActionTyped] = useState('');
  const [actor, setActor] = useState('');
  const [action, setAction] = useState('');
  const [appId, setAppId] = useState('');
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  useEffect(() => {
    const timer = setTimeout(() => { setActor(actorTyped.trim()); setAction(actionTyped.trim()); }, 300);
    return () => clearTimeout(timer);
  }, [actorTyped, actionTyped]);
  const filters = { actor, action, app_id: appId, from: isoFromLocal(from), to: isoFromLocal(to) };
  const paged = usePaged((cursor) => get<Page<AuditEvent>>('/audit' + query({ ...filters, limit: PAGE_SIZE, cursor, with_total: true })), JSON.stringify(filters));
  const appName = (id: string | null) => (id ? apps.find((a) => a.id === id)?.name ?? id.slice(0, 8) : '—');

  return (
    <>
      <h1>Audit log</h1>
      <Section title="Filter">
        <form class="inline-form" onSubmit={(e) => e.preventDefault()}>
          <label class="field">
            <span>Actor starts with</span>
            <input name="actor" placeholder="operator:alice" value={actorTyped} onInput={(e) => setActorTyped(e.currentTarget.value)} maxLength={200} />
          </label>
          <label class="field">
            <span>Action</span>
            <input name="action" placeholder="app.delete" value={actionTyped} onInput={(e) => setActionTyped(e.currentTarget.value)} maxLength={64} />
          </label>
          <label class="field">
            <span>Application</span>
            <select value={appId} onChange={(e) => setAppId(e.currentTarget.value)}>
              <option value="">Any</option>
              {apps.map((a) => <option value={a.id}>{a.name}</option>)}
            </select>
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
      </Section>
      <Section title="Events">
        <ErrorBox error={paged.error} />
        <Table caption="Audit events" empty={!paged.loading && paged.items.length === 0}>
          <thead><tr><th scope="col">When</th><th scope="col">Actor</th><th scope="col">Action</th><th scope="col">Application</th><th scope="col">Details</th></tr></thead>
          <tbody>
            {paged.items.map((e) => (
              <tr key={e.id}>
                <td><Time at={e.at} /></td>
                <td>{e.actor}</td>
                <td class="mono">{e.action}</td>
                <td>{appName(e.app_id)}</td>
                <td><Details details={e.details} />{e.target_id && <small class="muted mono">target {e.target_id}</small>}</td>
              </tr>
            ))}
          </tbody>
        </Table>
        <Pager paged={paged} noun="events" />
      </Section>
    </>
  );
}
