import { useEffect, useState } from 'preact/hooks';
import { api, get, query, type Page } from '../api';
import { ask, reveal } from '../components/dialog';
import { ErrorBox, PAGE_SIZE, Pager, Section, Table, Time, useAction, usePaged } from '../components/ui';
import { useApps } from '../Layout';
import { Link, navigate } from '../router';
import { useCan } from '../session';
import type { AppRecord, AppSettingsRecord, AppWithSecret } from '../types';

export function AppsPage() {
  const canWrite = useCan('apps');
  const { refresh } = useApps();
  const paged = usePaged((cursor) => get<Page<AppRecord>>('/apps' + query({ limit: PAGE_SIZE, cursor })), 'apps');
  const [name, setName] = useState('');
  const action = useAction();

  const create = async (event: Event) => {
    event.preventDefault();
    let created: AppWithSecret | null = null;
    const ok = await action.run(async () => { created = await api<AppWithSecret>('POST', '/apps', { name }); }, `Created ${name}`);
    if (!ok || !created) return;
    const app: AppWithSecret = created;
    setName('');
    refresh();
    paged.reload();
    await reveal('Application created', 'API secret', app.api_secret,
      <>The API key is <code class="mono">{app.api_key}</code>. The secret below is shown <strong>only now</strong>: put it in your client build.</>);
    navigate(`/apps/${app.id}/settings`);
  };

  return (
    <>
      <h1>Applications</h1>
      {canWrite && (
        <Section title="New application">
          <form class="inline-form" onSubmit={create}>
            <label class="field">
              <span>Name</span>
              <input name="name" required maxLength={128} value={name} onInput={(e) => setName(e.currentTarget.value)} />
            </label>
            <button type="submit" disabled={action.busy}>Create application</button>
          </form>
          <ErrorBox error={action.error} />
        </Section>
      )}
      <Section title="All applications">
        <ErrorBox error={paged.error} />
        <Table caption="Applications" empty={!paged.loading && paged.items.length === 0}>
          <thead><tr><th scope="col">Name</th><th scope="col">API key</th><th scope="col">Devices per user</th><th scope="col">Created</th></tr></thead>
          <tbody>
            {paged.items.map((app) => (
              <tr key={app.id}>
                <td><Link href={`/apps/${app.id}`}>{app.name}</Link></td>
                <td class="mono">{app.api_key}</td>
                <td>{app.max_devices_per_user}</td>
                <td><Time at={app.created_at} /></td>
              </tr>
            ))}
          </tbody>
        </Table>
        <Pager paged={paged} noun="applications" />
      </Section>
    </>
  );
}

/** `optint`: a number that may be unset (an empty field saves null). */
type FieldKind = 'bool' | 'int' | 'optint' | 'signatures';
type Field = [key: keyof AppSettingsRecord, label: string, kind: FieldKind, help?: string];
const GROUPS: [legend: string, fields: Field[]][] = [
  ['Access', [
    ['registration_open', 'Sign-ups open', 'bool', 'users may create accounts'],
    ['device_auth_enabled', 'Lock users to their devices', 'bool'],
    ['anonymous_access_allowed', 'Allow anonymous access', 'bool', 'clients without a user may read variables and files'],
    ['password_min_length', 'Shortest password', 'int'],
  ]],
  ['Devices and sessions', [
    ['max_devices_per_user', 'Devices per user', 'int'],
    ['max_sessions_per_user', 'Sessions per user (0: no cap)', 'int'],
    ['session_ttl_seconds', 'Session lifetime (seconds)', 'int'],
  ]],
  ['Signed answers and offline leases', [
    ['signatures', 'Signed answers', 'signatures', 'required: clients must ask for signed answers'],
    ['offline_grace_seconds', 'Offline grace (seconds, 0: no leases)', 'int'],
    ['lease_renew_seconds', 'Lease renewal (seconds)', 'int'],
  ]],
  ['Floating seats and device resets', [
    ['max_seats', 'Seats per user (empty: no seats)', 'optint', 'devices running at once; a license template may set its own'],
    ['heartbeat_seconds', 'Seat heartbeat (seconds)', 'int'],
    ['seat_grace_seconds', 'Seat grace (seconds)', 'int'],
    ['device_reset_cooldown_seconds', 'Own device reset: cooldown (seconds, 0: off)', 'int'],
    ['device_resets_per_year', 'Own device resets per year (empty: no cap)', 'optint'],
  ]],
  ['Rate limits', [
    ['rate_failures_per_identity', 'Failed logins per user or code', 'int'],
    ['rate_failures_per_identity_window_seconds', 'Failed logins per user or code: window (seconds)', 'int'],
    ['rate_failures_per_ip', 'Failed logins per IP', 'int'],
    ['rate_failures_per_ip_window_seconds', 'Failed logins per IP: window (seconds)', 'int'],
    ['rate_signups_per_ip', 'Sign-ups per IP', 'int'],
    ['rate_signups_per_ip_window_seconds', 'Sign-ups per IP: window (seconds)', 'int'],
    ['rate_signups_per_app', 'Sign-ups per app (0: no cap)', 'int'],
    ['rate_signups_per_app_window_seconds', 'Sign-ups per app: window (seconds)', 'int'],
  ]],
];

export function AppSettings({ appId }: { appId: string }) {
  const canWrite = useCan('apps');
  const { refresh } = useApps();
  const [app, setApp] = useState<AppRecord | null>(null);
  const [draft, setDraft] = useState<Partial<AppRecord>>({});
  const [loadError, setLoadError] = useState<unknown>(null);
  const save = useAction();
  const danger = useAction();

  useEffect(() => {
    setApp(null);
    get<AppRecord>(`/apps/${appId}`).then((a) => { setApp(a); setDraft({}); setLoadError(null); }, setLoadError);
  }, [appId]);

  if (loadError) return <><h1>Settings</h1><ErrorBox error={loadError} /></>;
  if (!app) return <p role="status">Loading…</p>;
  const value = <K extends keyof AppRecord>(key: K): AppRecord[K] => (key in draft ? (draft[key] as AppRecord[K]) : app[key]);
  const changed = Object.keys(draft).length > 0;

  const submit = async (event: Event) => {
    event.preventDefault();
    await save.run(async () => {
      const updated = await api<AppRecord>('PATCH', `/apps/${appId}`, draft);
      setApp(updated);
      setDraft({});
      refresh();
    }, 'Settings saved');
  };

  const rotate = async () => {
    const ok = await ask({
      title: 'Rotate the API secret?', confirmLabel: 'Rotate secret',
      body: <p>The current secret of <strong>{app.name}</strong> stops working at once: every client built with it is refused until it ships the new one.</p>,
    });
    if (!ok) return;
    let secret = '';
    if (await danger.run(async () => { secret = (await api<{ api_secret: string }>('POST', `/apps/${appId}/secret`)).api_secret; }, 'Secret rotated')) {
      await reveal('New API secret', 'API secret', secret, <>Shown <strong>only now</strong>. The old secret no longer works.</>);
    }
  };

  const remove = async () => {
    const ok = await ask({
      title: `Delete ${app.name}?`, confirmLabel: 'Delete application', typeToConfirm: app.name,
      body: <p>This deletes <strong>{app.name}</strong> with every user, license, variable, file, ban and key it has. It cannot be undone.</p>,
    });
    if (!ok) return;
    if (await danger.run(() => api('DELETE', `/apps/${appId}${query({ confirm: app.name })}`), `Deleted ${app.name}`)) {
      localStorage.removeItem('tollgate.dashboard.app');
      refresh();
      navigate('/apps');
    }
  };

  return (
    <>
      <h1>{app.name}: settings</h1>
      <Section title="Keys">
        <dl class="facts">
          <dt>Application id</dt><dd class="mono">{app.id}</dd>
          <dt>API key</dt><dd class="mono">{app.api_key}</dd>
          <dt>Created</dt><dd><Time at={app.created_at} /></dd>
        </dl>
      </Section>
      <Section title="Settings">
        <form onSubmit={submit}>
          <fieldset disabled={!canWrite}>
            <label class="field">
              <span>Name</span>
              <input value={value('name')} required maxLength={128} onInput={(e) => setDraft({ ...draft, name: e.currentTarget.value })} />
            </label>
            {GROUPS.map(([legend, fields]) => (
              <fieldset class="group grid-form" key={legend}>
                <legend>{legend}</legend>
                {fields.map(([key, label, kind, help]) => {
                  const id = `setting-${key}`;
                  if (kind === 'bool') {
                    return (
                      <label class="check" key={key}>
                        <input type="checkbox" id={id} checked={value(key) as boolean} onChange={(e) => setDraft({ ...draft, [key]: e.currentTarget.checked })} />
                        <span>{label}{help && <small class="muted"> ({help})</small>}</span>
                      </label>
                    );
                  }
                  if (kind === 'signatures') {
                    return (
                      <label class="field" key={key}>
                        <span>{label}</span>
                        <select id={id} value={value(key) as string} onChange={(e) => setDraft({ ...draft, [key]: e.currentTarget.value })}>
                          <option value="optional">optional</option>
                          <option value="required">required: {help}</option>
                        </select>
                      </label>
                    );
                  }
                  if (kind === 'optint') {
                    if (!(key in app)) return null; // a server before issue 25
                    const current = value(key) as number | null;
                    return (
                      <label class="field" key={key}>
                        <span>{label}{help && <small class="muted"> ({help})</small>}</span>
                        <input id={id} type="number" inputMode="numeric" min={1} step={1} value={current ?? ''}
                          onInput={(e) => setDraft({ ...draft, [key]: Number.isNaN(e.currentTarget.valueAsNumber) ? null : e.currentTarget.valueAsNumber })} />
                      </label>
                    );
                  }
                  if (!(key in app)) return null;
                  return (
                    <label class="field" key={key}>
                      <span>{label}</span>
                      <input id={id} type="number" inputMode="numeric" min={0} step={1} value={value(key) as number}
                        onInput={(e) => setDraft({ ...draft, [key]: e.currentTarget.valueAsNumber })} />
                    </label>
                  );
                })}
              </fieldset>
            ))}
          </fieldset>
          <ErrorBox error={save.error} />
          {canWrite ? (
            <div class="actions">
              <button type="button" class="secondary" disabled={!changed} onClick={() => setDraft({})}>Undo changes</button>
              <button type="submit" disabled={!changed || save.busy}>Save settings</button>
            </div>
          ) : (
            <p class="muted" data-testid="read-only">Your role cannot change applications.</p>
          )}
        </form>
      </Section>
      {canWrite && (
        <Section title="Danger zone">
          <ErrorBox error={danger.error} />
          <div class="actions start">
            <button type="button" class="secondary" onClick={rotate}>Rotate API secret</button>
            <button type="button" class="danger" onClick={remove}>Delete application</button>
          </div>
        </Section>
      )}
    </>
  );
}
