/**
 * Webhook endpoints (issue 23) of one application (/apps/:app/webhooks) or service-wide (/webhooks):
 * the same page, the scope from the path. An endpoint the service disabled (the receiver answered
 * 410 Gone, or every delivery failed for 24 hours) is shown as such, with the reason, on the list
 * and on its own page; enabling it again is the operator's call.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, get, query, type Page } from '../api';
import { ask, reveal } from '../components/dialog';
import { ErrorBox, isoFromLocal, notify, PAGE_SIZE, Pager, Section, Table, Time, useAction, usePaged } from '../components/ui';
import { Link, navigate } from '../router';
import { useCan } from '../session';
import type { WebhookDelivery, WebhookEndpoint, WebhookKind } from '../types';

/** The API path of the scope: an app's endpoints or the service-wide ones. */
const scopePath = (appId?: string) => (appId ? `/apps/${appId}/webhooks` : '/webhooks');
/** The dashboard path of the same. */
const pagePath = (appId?: string) => (appId ? `/apps/${appId}/webhooks` : '/webhooks');

/** enabled / failing / disabled, with the reason: the one place an endpoint's state is worded. */
export function EndpointState({ endpoint }: { endpoint: WebhookEndpoint }) {
  if (!endpoint.enabled) {
    return <span class="badge bad" data-testid="endpoint-disabled">disabled{endpoint.disabled_reason ? `: ${endpoint.disabled_reason}` : ' by an operator'}</span>;
  }
  if (endpoint.failing_since) return <span class="badge warn">failing since {new Date(endpoint.failing_since).toLocaleString()}</span>;
  return <span class="badge ok">enabled</span>;
}

function typesText(types: string[] | null): string {
  return types === null ? 'every event' : types.join(', ');
}

function parseTypes(text: string): string[] | null {
  const types = text.split(/[\s,]+/).map((t) => t.trim()).filter(Boolean);
  return types.length ? [...new Set(types)] : null;
}

export function Webhooks({ appId }: { appId?: string }) {
  const canWrite = useCan('apps');
  const paged = usePaged((cursor) => get<Page<WebhookEndpoint>>(scopePath(appId) + query({ limit: PAGE_SIZE, cursor })), appId ?? 'service');
  const [url, setUrl] = useState('');
  const [kind, setKind] = useState<WebhookKind>('standard');
  const [types, setTypes] = useState('');
  const [description, setDescription] = useState('');
  const create = useAction();
  const row = useAction();
  // The public half of the Ed25519 key that signs the v1a signatures, for receivers that verify without a shared secret.
  const [publicKey, setPublicKey] = useState<string | null>(null);
  useEffect(() => {
    setPublicKey(null);
    get<{ public_key: string }>(appId ? `/apps/${appId}/webhook-key` : '/webhook-key').then((k) => setPublicKey(k.public_key), () => setPublicKey(null));
  }, [appId]);

  const submit = async (event: Event) => {
    event.preventDefault();
    let created: (WebhookEndpoint & { secret: string }) | null = null;
    const body = { url: url.trim(), kind, event_types: parseTypes(types), ...(description && { description }) };
    if (!(await create.run(async () => { created = await api<WebhookEndpoint & { secret: string }>('POST', scopePath(appId), body); }, 'Endpoint created'))) return;
    setUrl('');
    setTypes('');
    setDescription('');
    paged.reload();
    const endpoint: WebhookEndpoint & { secret: string } = created!;
    if (endpoint.kind === 'standard') {
      await reveal('Endpoint created', 'Signing secret', endpoint.secret,
        <>Your receiver checks each delivery's signature with this secret (Standard Webhooks, docs/webhooks.md). It is shown <strong>only now</strong>.</>);
    }
  };

  const remove = async (endpoint: WebhookEndpoint) => {
    if (!(await ask({ title: 'Delete this endpoint?', confirmLabel: 'Delete endpoint', body: <p><code>{endpoint.url}</code> and its delivery log are deleted; nothing more is sent to it.</p> }))) return;
    if (await row.run(() => api('DELETE', `${scopePath(appId)}/${endpoint.id}`), 'Endpoint deleted')) paged.reload();
  };

  return (
    <>
      <h1>{appId ? 'Webhooks' : 'Service-wide webhooks'}</h1>
      <p class="muted">
        {appId ? 'Endpoints that receive this application’s events.' : 'Endpoints that receive the events of every application.'}{' '}
        <Link href={appId ? `/apps/${appId}/events` : '/events'}>Events sent</Link>
      </p>
      {canWrite && (
        <Section title="New endpoint">
          <form onSubmit={submit} class="grid-form">
            <label class="field">
              <span>URL (https)</span>
              <input name="webhook-url" type="url" required maxLength={2048} value={url} onInput={(e) => setUrl(e.currentTarget.value)} placeholder="https://example.com/hooks/tollgate" />
            </label>
            <label class="field">
              <span>Format</span>
              <select name="webhook-kind" value={kind} onChange={(e) => setKind(e.currentTarget.value as WebhookKind)}>
                <option value="standard">Standard Webhooks (signed JSON)</option>
                <option value="discord">Discord (embeds)</option>
              </select>
            </label>
            <label class="field">
              <span>Event types (comma-separated; empty: every event)</span>
              <input name="webhook-types" maxLength={4000} value={types} onInput={(e) => setTypes(e.currentTarget.value)} placeholder="user.created, license.created" />
            </label>
            <label class="field">
              <span>Description (optional)</span>
              <input name="webhook-description" maxLength={500} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
            </label>
            <div class="actions start"><button type="submit" disabled={create.busy}>Create endpoint</button></div>
          </form>
          <ErrorBox error={create.error} />
        </Section>
      )}
      <Section title="Endpoints">
        <ErrorBox error={paged.error ?? row.error} />
        <Table caption="Webhook endpoints" empty={!paged.loading && paged.items.length === 0}>
          <thead><tr><th scope="col">URL</th><th scope="col">State</th><th scope="col">Events</th><th scope="col">Format</th><th scope="col">Created</th>{canWrite && <th scope="col"><span class="visually-hidden">Actions</span></th>}</tr></thead>
          <tbody>
            {paged.items.map((e) => (
              <tr key={e.id}>
                <td><Link href={`${pagePath(appId)}/${e.id}`} class="mono">{e.url}</Link>{e.description && <div class="muted">{e.description}</div>}</td>
                <td><EndpointState endpoint={e} /></td>
                <td>{typesText(e.event_types)}</td>
                <td>{e.kind}</td>
                <td><Time at={e.created_at} /></td>
                {canWrite && <td><button type="button" class="secondary" onClick={() => remove(e)} aria-label={`Delete the endpoint ${e.url}`}>Delete</button></td>}
              </tr>
            ))}
          </tbody>
        </Table>
        <Pager paged={paged} noun="endpoints" />
      </Section>
      {publicKey && (
        <Section title="Verifying signatures">
          <p class="muted">Standard endpoints get two signatures: v1 (HMAC with the endpoint’s secret) and v1a (Ed25519). Receivers that check v1a need only this public key.</p>
          <dl class="facts">
            <dt>Ed25519 public key</dt><dd class="mono" data-testid="webhook-public-key">{publicKey}</dd>
          </dl>
        </Section>
      )}
    </>
  );
}

/** One endpoint: its state and settings, the test event, its secret, and the delivery log with replays. */
export function WebhookDetail({ appId, endpointId }: { appId?: string; endpointId: string }) {
  const canWrite = useCan('apps');
  const base = `${scopePath(appId)}/${endpointId}`;
  const [endpoint, setEndpoint] = useState<WebhookEndpoint | null>(null);
  const [loadError, setLoadError] = useState<unknown>(null);
  const [tick, setTick] = useState(0);
  const [status, setStatus] = useState('');
  const [since, setSince] = useState('');
  const [types, setTypes] = useState<string | null>(null);
  const action = useAction();
  const paged = usePaged((cursor) => get<Page<WebhookDelivery>>(`${base}/deliveries` + query({ status, limit: PAGE_SIZE, cursor })), base + status);

  useEffect(() => {
    get<WebhookEndpoint>(base).then((e) => { setEndpoint(e); setLoadError(null); }, setLoadError);
  }, [base, tick]);

  if (loadError) return <><h1>Webhook endpoint</h1><ErrorBox error={loadError} /><p><Link href={pagePath(appId)}>Back to the endpoints</Link></p></>;
  if (!endpoint) return <p role="status">Loading…</p>;
  const reload = () => { setTick((n) => n + 1); paged.reload(); };

  const setEnabled = async (enabled: boolean) => {
    const ok = await ask({
      title: enabled ? 'Enable this endpoint?' : 'Disable this endpoint?', confirmLabel: enabled ? 'Enable' : 'Disable', danger: !enabled,
      body: <p>{enabled ? <>Deliveries to <code>{endpoint.url}</code> start again; why it was disabled is forgotten.</> : <>Nothing more is sent to <code>{endpoint.url}</code> until it is enabled again.</>}</p>,
    });
    if (ok && (await action.run(() => api('PATCH', base, { enabled }), enabled ? 'Endpoint enabled' : 'Endpoint disabled'))) reload();
  };
  const sendTest = async () => {
    if (await action.run(() => api('POST', `${base}/test`), 'Test event queued')) setTimeout(reload, 1000);
  };
  const rotate = async () => {
    if (!(await ask({ title: 'Replace the signing secret?', confirmLabel: 'Replace secret', body: <p>The old secret keeps signing beside the new one for 24 hours, so the receiver can switch over.</p> }))) return;
    let secret = '';
    if (await action.run(async () => { secret = (await api<{ secret: string }>('POST', `${base}/secret`)).secret; }, 'Secret replaced')) {
      await reveal('New signing secret', 'Signing secret', secret, <>Shown <strong>only now</strong>. The old one still signs for 24 hours.</>);
      reload();
    }
  };
  const saveTypes = async (event: Event) => {
    event.preventDefault();
    if (types === null) return;
    if (await action.run(() => api('PATCH', base, { event_types: parseTypes(types) }), 'Event types saved')) { setTypes(null); reload(); }
  };
  const remove = async () => {
    if (!(await ask({ title: 'Delete this endpoint?', confirmLabel: 'Delete endpoint', body: <p><code>{endpoint.url}</code> and its delivery log are deleted.</p> }))) return;
    if (await action.run(() => api('DELETE', base), 'Endpoint deleted')) navigate(pagePath(appId));
  };
  const replayOne = async (delivery: WebhookDelivery) => {
    if (await action.run(() => api('POST', `${base}/deliveries/${delivery.id}/replay`), 'Delivery queued again')) setTimeout(reload, 1000);
  };
  const replayFailed = async (event: Event) => {
    event.preventDefault();
    const from = isoFromLocal(since);
    if (!from) return;
    if (!(await ask({ title: 'Send the failed deliveries again?', confirmLabel: 'Replay failures', danger: false, body: <p>Every failed delivery to <code>{endpoint.url}</code> created since {new Date(from).toLocaleString()} is sent again from the start of the schedule.</p> }))) return;
    let replayed = 0;
    if (await action.run(async () => { replayed = (await api<{ replayed: number }>('POST', `${base}/replay`, { since: from })).replayed; })) {
      notify(`${replayed} deliveries queued again`);
      reload();
    }
  };

  return (
    <>
      <p><Link href={pagePath(appId)}>← Webhooks</Link></p>
      <h1 class="break">{endpoint.url}</h1>
      <ErrorBox error={action.error} />
      {!endpoint.enabled && (
        <p class="error" role="status" data-testid="disabled-banner">
          This endpoint is disabled{endpoint.disabled_reason ? `: ${endpoint.disabled_reason}` : ' by an operator'}. Nothing is sent to it until it is enabled again.
        </p>
      )}
      <Section title="Endpoint">
        <dl class="facts">
          <dt>State</dt><dd><EndpointState endpoint={endpoint} /></dd>
          <dt>Scope</dt><dd>{endpoint.app_id ? 'this application' : 'every application'}</dd>
          <dt>Format</dt><dd>{endpoint.kind}</dd>
          <dt>Events</dt><dd>{typesText(endpoint.event_types)}</dd>
          {endpoint.description && <><dt>Description</dt><dd>{endpoint.description}</dd></>}
          <dt>Failing since</dt><dd><Time at={endpoint.failing_since} never="not failing" /></dd>
          {endpoint.previous_secret_until && <><dt>Previous secret signs until</dt><dd><Time at={endpoint.previous_secret_until} /></dd></>}
          <dt>Created</dt><dd><Time at={endpoint.created_at} /></dd>
        </dl>
        {canWrite && (
          <>
            <div class="actions start">
              <button type="button" class="secondary" onClick={sendTest} disabled={action.busy || !endpoint.enabled}>Send test event</button>
              {endpoint.enabled
                ? <button type="button" class="secondary" onClick={() => setEnabled(false)}>Disable</button>
                : <button type="button" onClick={() => setEnabled(true)}>Enable again</button>}
              {endpoint.kind === 'standard' && <button type="button" class="secondary" onClick={rotate}>Replace secret</button>}
              <button type="button" class="danger" onClick={remove}>Delete endpoint</button>
            </div>
            <form class="inline-form" onSubmit={saveTypes}>
              <label class="field">
                <span>Event types (comma-separated; empty: every event)</span>
                <input name="endpoint-types" maxLength={4000} value={types ?? (endpoint.event_types ?? []).join(', ')} onInput={(e) => setTypes(e.currentTarget.value)} />
              </label>
              <button type="submit" class="secondary" disabled={types === null || action.busy}>Save event types</button>
            </form>
          </>
        )}
      </Section>
      <Section title="Deliveries">
        <form class="inline-form" onSubmit={(e) => e.preventDefault()} aria-label="Filter deliveries">
          <label class="field">
            <span>Status</span>
            <select name="delivery-status" value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
              <option value="">All</option>
              <option value="pending">Pending</option>
              <option value="delivered">Delivered</option>
              <option value="failed">Failed</option>
            </select>
          </label>
        </form>
        {canWrite && (
          <form class="inline-form" onSubmit={replayFailed}>
            <label class="field">
              <span>Replay failures created since</span>
              <input name="replay-since" type="datetime-local" required value={since} onInput={(e) => setSince(e.currentTarget.value)} />
            </label>
            <button type="submit" class="secondary" disabled={action.busy}>Replay failed</button>
          </form>
        )}
        <ErrorBox error={paged.error} />
        <Table caption="Deliveries" empty={!paged.loading && paged.items.length === 0}>
          <thead><tr><th scope="col">Event</th><th scope="col">Status</th><th scope="col" class="num">Attempts</th><th scope="col">Next attempt</th><th scope="col">Created</th><th scope="col">Answers</th>{canWrite && <th scope="col"><span class="visually-hidden">Actions</span></th>}</tr></thead>
          <tbody>
            {paged.items.map((d) => (
              <tr key={d.id} data-testid="delivery">
                <td><span class="mono">{d.event_type}</span><div class="muted mono small">{d.event_id}</div></td>
                <td><span class={d.status === 'delivered' ? 'badge ok' : d.status === 'failed' ? 'badge bad' : 'badge'}>{d.status}</span>{d.last_status !== null && <> (HTTP {d.last_status})</>}</td>
                <td class="num">{d.attempts}</td>
                <td><Time at={d.next_attempt_at} never="none" /></td>
                <td><Time at={d.created_at} /></td>
                <td>
                  {d.attempt_log.length === 0 ? 'none yet' : (
                    <details>
                      <summary>{d.attempt_log.length} answer{d.attempt_log.length === 1 ? '' : 's'}</summary>
                      <ol class="attempts">
                        {d.attempt_log.map((a) => (
                          <li>
                            <Time at={a.at} />: {a.status !== null ? `HTTP ${a.status}` : 'no answer'}{a.error && ` (${a.error})`}, {a.duration_ms} ms
                            {a.body && <pre class="answer">{a.body}</pre>}
                          </li>
                        ))}
                      </ol>
                    </details>
                  )}
                </td>
                {canWrite && <td>{d.status !== 'pending' && <button type="button" class="secondary" onClick={() => replayOne(d)} aria-label={`Replay the delivery of ${d.event_type} ${d.event_id}`}>Replay</button>}</td>}
              </tr>
            ))}
          </tbody>
        </Table>
        <Pager paged={paged} noun="deliveries" />
      </Section>
    </>
  );
}
