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

/** Nested objects as dotted keys (membership.active_until), so a change shows only what changed. */
function flat(value: unknown, prefix = '', into: Record<string, unknown> = {}): Record<string, unknown> {
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value)) flat(v, prefix ? `${prefix}.${k}` : k, into);
  } else if (prefix) {
    into[prefix] = value;
  }
  return into;
}

const SHOWN = 5;

/** before/after pairs as "field: old → new" (unchanged fields left out); anything else as key: value. */
export function Details({ details }: { details: Record<string, unknown> }) {
  const before = flat(details.before);
  const after = flat(details.after);
  const rows: [string, string][] = [];
  for (const field of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const had = field in before;
    const has = field in after;
    if (had && has && show(before[field]) === show(after[field])) continue;
    rows.push([field, had && has ? `${show(before[field])} → ${show(after[field])}` : has ? show(after[field]) : `${show(before[field])} (removed)`]);
  }
  for (const [key, value] of Object.entries(flat(Object.fromEntries(Object.entries(details).filter(([k]) => k !== 'before' && k !== 'after'))))) {
    rows.push([key, show(value)]);
  }
  if (rows.length === 0) return null;
  const list = (part: [string, string][]) => (
    <dl class="details-json">{part.map(([k, v]) => <><dt>{k}</dt><dd>{v}</dd></>)}</dl>
  );
  if (rows.length <= SHOWN + 1) return list(rows);
  return (
    <>
      {list(rows.slice(0, SHOWN))}
      <details><summary>{rows.length - SHOWN} more</summary>{list(rows.slice(SHOWN))}</details>
    </>
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
                <td><Details details={e.details} />{e.target_id && <small class="muted mono target">target {e.target_id}</small>}</td>
              </tr>
            ))}
          </tbody>
        </Table>
        <Pager paged={paged} noun="events" />
      </Section>
    </>
  );
}
