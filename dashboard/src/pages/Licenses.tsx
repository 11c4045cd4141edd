import { useEffect, useState } from 'preact/hooks';
import { API, api, get, query, type Page } from '../api';
import { ask } from '../components/dialog';
import { ErrorBox, isoFromLocal, notify, PAGE_SIZE, Pager, Section, Table, Time, useAction, useDebounced, usePaged } from '../components/ui';
import { Link } from '../router';
import { useCan } from '../session';
import type { License, Template } from '../types';

type Kind = 'minutes' | 'lifetime' | 'revoke' | 'template';
const DEFAULT_MASK = 'XXXXX-XXXXX-XXXXX-XXXXX';

function describe(l: License): string {
  if (l.grants_lifetime_access) return 'lifetime';
  if (l.revokes_lifetime_access) return l.minutes ? `revokes lifetime, ${minutesText(l.minutes)}` : 'revokes lifetime';
  return l.minutes ? minutesText(l.minutes) : '—';
}

export function minutesText(minutes: number): string {
  if (minutes % 1440 === 0) return `${minutes / 1440} day${minutes === 1440 ? '' : 's'}`;
  if (minutes % 60 === 0) return `${minutes / 60} h`;
  return `${minutes} min`;
}

function csv(licenses: License[]): string {
  const cell = (v: unknown) => {
    const text = v === null || v === undefined ? '' : String(v);
    // A leading = + - @ would run as a formula in a spreadsheet: prefix a quote.
    const safe = /^[=+\-@\t\r]/.test(text) ? "'" + text : text;
    return /[",\n\r]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
  };
  const rows = licenses.map((l) => [l.code, l.minutes, l.grants_lifetime_access, l.revokes_lifetime_access, l.note, l.expires_at, l.created_at].map(cell).join(','));
  return ['code,minutes,lifetime,revokes_lifetime,note,expires_at,created_at', ...rows].join('\r\n') + '\r\n';
}

function download(name: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: 'text/csv' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** The app's templates (the first 100), for the filter, the column and the batch form. */
function useTemplates(appId: string): Template[] {
  const [templates, setTemplates] = useState<Template[]>([]);
  useEffect(() => {
    get<Page<Template>>(`/apps/${appId}/templates?limit=100`).then((p) => setTemplates(p.items), () => setTemplates([]));
  }, [appId]);
  return templates;
}

export function Licenses({ appId }: { appId: string }) {
  const canWrite = useCan('licenses');
  const templates = useTemplates(appId);
  const [template, setTemplate] = useState('');
  const [used, setUsed] = useState('');
  const [search, setSearch] = useState('');
  const [note, setNote] = useState('');
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const searchSettled = useDebounced(search);
  const noteSettled = useDebounced(note);
  const filters = { used, q: searchSettled, note: noteSettled, created_from: isoFromLocal(from), created_to: isoFromLocal(to), template_id: template };
  const key = JSON.stringify([appId, filters]);
  const paged = usePaged((cursor) => get<Page<License>>(`/apps/${appId}/licenses` + query({ ...filters, limit: PAGE_SIZE, cursor, with_total: true })), key);
  const row = useAction();
  const bulk = useAction();

  const remove = async (license: License) => {
    if (!(await ask({ title: 'Delete this license?', confirmLabel: 'Delete license', body: <p>The unused code <code>{license.code}</code> stops working at once.</p> }))) return;
    if (await row.run(() => api('DELETE', `/apps/${appId}/licenses/${license.id}`), 'License deleted')) paged.reload();
  };

  const removeUnused = async () => {
    const limits = [
      noteSettled && <> whose note contains <strong>{noteSettled}</strong></>,
      filters.created_from && <> created from <strong>{from.replace('T', ' ')}</strong></>,
      filters.created_to && <> created before <strong>{to.replace('T', ' ')}</strong></>,
    ].filter(Boolean);
    const scope = <>every <strong>unused</strong> license{limits.length ? limits : ' of this application'}</>;
    if (!(await ask({ title: 'Delete unused licenses?', confirmLabel: 'Delete unused licenses', body: <p>This deletes {scope}. Codes already handed out stop working.</p> }))) return;
    let deleted = 0;
    if (await bulk.run(async () => { deleted = (await api<{ deleted: number }>('POST', `/apps/${appId}/licenses/delete_unused`, {
      ...(noteSettled && { note: noteSettled }), ...(filters.created_from && { created_from: filters.created_from }), ...(filters.created_to && { created_to: filters.created_to }),
    })).deleted; })) {
      row.clear();
      paged.reload();
      notify(`${deleted} unused licenses deleted`);
    }
  };

  const exportHref = `${API}/apps/${appId}/licenses/export` + query(filters);

  return (
    <>
      <h1>Licenses</h1>
      {canWrite && <CreateBatch appId={appId} templates={templates} onCreated={paged.reload} />}
      <Section title="All licenses" actions={<a class="button secondary" href={exportHref} download data-testid="export-csv">Download CSV</a>}>
        <form class="inline-form" onSubmit={(e) => e.preventDefault()} aria-label="Filter licenses">
          <label class="field">
            <span>Status</span>
            <select value={used} onChange={(e) => setUsed(e.currentTarget.value)}>
              <option value="">All</option>
              <option value="false">Unused</option>
              <option value="true">Used</option>
            </select>
          </label>
          {templates.length > 0 && (
            <label class="field">
              <span>Template</span>
              <select name="template-filter" value={template} onChange={(e) => setTemplate(e.currentTarget.value)}>
                <option value="">Any</option>
                {templates.map((t) => <option value={t.id}>{t.name}</option>)}
              </select>
            </label>
          )}
          <label class="field">
            <span>Code or note contains</span>
            <input type="search" value={search} onInput={(e) => setSearch(e.currentTarget.value)} maxLength={128} />
          </label>
          <label class="field">
            <span>Note contains</span>
            <input type="search" name="note-filter" value={note} onInput={(e) => setNote(e.currentTarget.value)} maxLength={1000} />
          </label>
          <label class="field">
            <span>Created from</span>
            <input type="datetime-local" value={from} onInput={(e) => setFrom(e.currentTarget.value)} />
          </label>
          <label class="field">
            <span>Created before</span>
            <input type="datetime-local" value={to} onInput={(e) => setTo(e.currentTarget.value)} />
          </label>
          {canWrite && <button type="button" class="danger" onClick={removeUnused} disabled={bulk.busy}>Delete unused…</button>}
        </form>
        <ErrorBox error={paged.error ?? row.error ?? bulk.error} />
        <Table caption="Licenses" empty={!paged.loading && paged.items.length === 0}>
          <thead><tr><th scope="col">Code</th><th scope="col">Grants</th><th scope="col">Template</th><th scope="col">Note</th><th scope="col">Created</th><th scope="col">Redeem before</th><th scope="col">Used</th>{canWrite && <th scope="col"><span class="visually-hidden">Actions</span></th>}</tr></thead>
          <tbody>
            {paged.items.map((l) => (
              <tr key={l.id}>
                <td class="mono">{l.code}</td>
                <td>{describe(l)}{l.entitlements && l.entitlements.length > 0 && <> · <span class="mono">{l.entitlements.join(', ')}</span></>}</td>
                <td>{l.template_id ? (templates.find((t) => t.id === l.template_id)?.name ?? l.template_id) : ''}</td>
                <td>{l.note ?? ''}</td>
                <td><Time at={l.created_at} /></td>
                <td><Time at={l.expires_at} never="no limit" /></td>
                <td>{l.used_at ? <>{l.used_by_user_id ? <Link href={`/apps/${appId}/users/${l.used_by_user_id}`}><Time at={l.used_at} /></Link> : <Time at={l.used_at} />}</> : <span class="badge ok">unused</span>}</td>
                {canWrite && <td>{!l.used_at && <button type="button" class="secondary" onClick={() => remove(l)} aria-label={`Delete license ${l.code}`}>Delete</button>}</td>}
              </tr>
            ))}
          </tbody>
        </Table>
        <Pager paged={paged} noun="licenses" />
      </Section>
    </>
  );
}

function CreateBatch({ appId, templates, onCreated }: { appId: string; templates: Template[]; onCreated: () => void }) {
  const [templateId, setTemplateId] = useState('');
  const [count, setCount] = useState(10);
  const [mask, setMask] = useState(DEFAULT_MASK);
  const [kind, setKind] = useState<Kind>('minutes');
  const [days, setDays] = useState(30);
  const [expires, setExpires] = useState('');
  const [note, setNote] = useState('');
  const [created, setCreated] = useState<License[]>([]);
  const action = useAction();

  const submit = async (event: Event) => {
    event.preventDefault();
    const body: Record<string, unknown> = { count, mask };
    if (kind === 'template') body.template_id = templateId || templates[0]?.id;
    if (kind === 'minutes') body.minutes = Math.round(days * 1440);
    if (kind === 'lifetime') body.lifetime = true;
    if (kind === 'revoke') body.revokes_lifetime_access = true;
    if (note) body.note = note;
    const expiresAt = isoFromLocal(expires);
    if (expiresAt) body.expires_at = expiresAt;
    await action.run(async () => {
      const answer = await api<{ licenses: License[] }>('POST', `/apps/${appId}/licenses`, body);
      setCreated(answer.licenses);
      onCreated();
    }, `Created ${count} licenses`);
  };

  return (
    <Section title="Create a batch">
      <form onSubmit={submit}>
        <div class="grid-form">
          <label class="field">
            <span>How many</span>
            <input name="count" type="number" min={1} max={10000} required value={count} onInput={(e) => setCount(e.currentTarget.valueAsNumber)} />
          </label>
          <label class="field">
            <span>Mask (X: a random symbol; at least 13)</span>
            <input name="mask" class="mono" required maxLength={128} value={mask} onInput={(e) => setMask(e.currentTarget.value)} />
          </label>
          <fieldset class="radios">
            <legend>Grants</legend>
            <label><input type="radio" name="kind" checked={kind === 'minutes'} onChange={() => setKind('minutes')} /> Time</label>
            <label><input type="radio" name="kind" checked={kind === 'lifetime'} onChange={() => setKind('lifetime')} /> Lifetime</label>
            <label><input type="radio" name="kind" checked={kind === 'revoke'} onChange={() => setKind('revoke')} /> Revokes lifetime</label>
            {templates.length > 0 && <label><input type="radio" name="kind" checked={kind === 'template'} onChange={() => setKind('template')} /> From a template</label>}
          </fieldset>
          {kind === 'template' && (
            <label class="field">
              <span>Template</span>
              <select name="template" value={templateId || templates[0]?.id} onChange={(e) => setTemplateId(e.currentTarget.value)}>
                {templates.map((t) => <option value={t.id}>{t.name}</option>)}
              </select>
            </label>
          )}
          {kind === 'minutes' && (
            <label class="field">
              <span>Days of membership</span>
              <input name="days" type="number" min={0.0007} step="any" required value={days} onInput={(e) => setDays(e.currentTarget.valueAsNumber)} />
            </label>
          )}
          <label class="field">
            <span>Redeem before (optional)</span>
            <input name="expires_at" type="datetime-local" value={expires} onInput={(e) => setExpires(e.currentTarget.value)} />
          </label>
          <label class="field">
            <span>Note (optional)</span>
            <input name="note" maxLength={1000} value={note} onInput={(e) => setNote(e.currentTarget.value)} />
          </label>
        </div>
        <ErrorBox error={action.error} />
        <div class="actions">
          <button type="submit" disabled={action.busy}>{action.busy ? 'Creating…' : 'Create licenses'}</button>
        </div>
      </form>
      {created.length > 0 && (
        <div class="created">
          <label class="field">
            <span>{created.length} new codes</span>
            <textarea readOnly class="mono" data-testid="new-codes" value={created.map((l) => l.code).join('\n')} />
          </label>
          <div class="actions start">
            <button type="button" class="secondary" onClick={() => download(`licenses-${new Date().toISOString().slice(0, 10)}.csv`, csv(created))}>Download these codes (CSV)</button>
            <button type="button" class="secondary" onClick={() => setCreated([])}>Hide</button>
          </div>
        </div>
      )}
    </Section>
  );
}
