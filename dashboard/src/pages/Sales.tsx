/**
 * Sales in (issue 23): the stores an application sells through (Stripe, Paddle Billing, Lemon
 * Squeezy), each with its webhook signing secret (sealed on the server, only its last four
 * characters shown back) and its product mappings; and the orders received.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, get, query, type Page } from '../api';
import { ask } from '../components/dialog';
import { ErrorBox, minutesText, PAGE_SIZE, Pager, Section, Table, Time, useAction, usePaged } from '../components/ui';
import { useCan } from '../session';
import type { Integration, Order, OrderLicense, ProductMapping, Provider, Template } from '../types';
import { describeTemplate, templatesOf } from './Templates';

const PROVIDERS: [Provider, string, string][] = [
  ['stripe', 'Stripe', 'whsec_… from the webhook endpoint in Stripe'],
  ['paddle', 'Paddle Billing', 'pdl_ntfset_… from the notification destination in Paddle'],
  ['lemonsqueezy', 'Lemon Squeezy', 'the signing secret you chose in Lemon Squeezy'],
];

export function Sales({ appId }: { appId: string }) {
  const [integrations, setIntegrations] = useState<Integration[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [tick, setTick] = useState(0);
  const orders = usePaged((cursor) => get<Page<Order>>(`/apps/${appId}/orders` + query({ limit: PAGE_SIZE, cursor })), appId);

  useEffect(() => {
    get<{ items: Integration[] }>(`/apps/${appId}/integrations`).then((a) => { setIntegrations(a.items); setError(null); }, setError);
  }, [appId, tick]);

  return (
    <>
      <h1>Sales</h1>
      <p class="muted">A paid order creates licenses for what its product is mapped to; renewals extend them, refunds and cancellations take them back (docs/integrations.md).</p>
      <ErrorBox error={error} />
      {!integrations && !error && <p role="status">Loading…</p>}
      {integrations && PROVIDERS.map(([provider, label, hint]) => (
        <Store key={provider} appId={appId} provider={provider} label={label} hint={hint}
          integration={integrations.find((i) => i.provider === provider) ?? null} onChanged={() => setTick((n) => n + 1)} />
      ))}
      <Section title="Orders">
        <ErrorBox error={orders.error} />
        <Table caption="Orders" empty={!orders.loading && orders.items.length === 0}>
          <thead><tr><th scope="col">Store</th><th scope="col">Order</th><th scope="col">Buyer</th><th scope="col">Status</th><th scope="col">Received</th><th scope="col">Licenses</th></tr></thead>
          <tbody>
            {orders.items.map((o) => (
              <tr key={o.id}>
                <td>{PROVIDERS.find(([p]) => p === o.provider)?.[1] ?? o.provider}</td>
                <td class="mono">{o.order_ref}</td>
                <td>{o.buyer_email ?? '—'}</td>
                <td><span class={o.status === 'active' ? 'badge ok' : 'badge bad'}>{o.status}</span></td>
                <td><Time at={o.created_at} /></td>
                <td><OrderLicenses appId={appId} order={o} /></td>
              </tr>
            ))}
          </tbody>
        </Table>
        <Pager paged={orders} noun="orders" />
      </Section>
    </>
  );
}

function Store({ appId, provider, label, hint, integration, onChanged }: { appId: string; provider: Provider; label: string; hint: string; integration: Integration | null; onChanged: () => void }) {
  const canWrite = useCan('apps');
  const base = `/apps/${appId}/integrations/${provider}`;
  const [secret, setSecret] = useState('');
  const action = useAction();

  const saveSecret = async (event: Event) => {
    event.preventDefault();
    if (await action.run(() => api('PUT', base, { signing_secret: secret }), integration ? `${label}: secret replaced` : `${label} connected`)) {
      setSecret('');
      onChanged();
    }
  };
  const setEnabled = async (enabled: boolean) => {
    if (!enabled && !(await ask({ title: `Turn ${label} off?`, confirmLabel: 'Turn off', body: <p>{label}’s webhooks are refused (401) until it is turned on again: no licenses are made for its sales meanwhile.</p> }))) return;
    if (await action.run(() => api('PATCH', base, { enabled }), enabled ? `${label} turned on` : `${label} turned off`)) onChanged();
  };
  const remove = async () => {
    if (!(await ask({ title: `Remove ${label}?`, confirmLabel: `Remove ${label}`, body: <p>Its secret and product mappings are deleted; orders received stay.</p> }))) return;
    if (await action.run(() => api('DELETE', base), `${label} removed`)) onChanged();
  };

  return (
    <Section title={label}>
      <ErrorBox error={action.error} />
      {integration ? (
        <dl class="facts">
          <dt>State</dt><dd data-testid={`store-${provider}`}>{integration.enabled ? <span class="badge ok">on</span> : <span class="badge bad">off: its webhooks are refused</span>}</dd>
          <dt>Webhook address</dt><dd class="mono">{location.origin}{integration.webhook_path}</dd>
          <dt>Signing secret</dt><dd class="mono">…{integration.secret_hint}</dd>
          <dt>Connected</dt><dd><Time at={integration.created_at} /></dd>
        </dl>
      ) : <p class="muted">Not connected.</p>}
      {canWrite && (
        <>
          <form class="inline-form" onSubmit={saveSecret}>
            <label class="field">
              <span>{integration ? 'New signing secret' : 'Signing secret'} ({hint})</span>
              <input name={`secret-${provider}`} type="password" autoComplete="off" required minLength={6} maxLength={512} value={secret} onInput={(e) => setSecret(e.currentTarget.value)} />
            </label>
            <button type="submit" disabled={action.busy}>{integration ? 'Replace secret' : `Connect ${label}`}</button>
          </form>
          {integration && (
            <div class="actions start">
              {integration.enabled
                ? <button type="button" class="secondary" onClick={() => setEnabled(false)}>Turn off</button>
                : <button type="button" class="secondary" onClick={() => setEnabled(true)}>Turn on</button>}
              <button type="button" class="danger" onClick={remove}>Remove {label}</button>
            </div>
          )}
        </>
      )}
      {integration && <Mappings appId={appId} provider={provider} label={label} />}
    </Section>
  );
}

function Mappings({ appId, provider, label }: { appId: string; provider: Provider; label: string }) {
  const canWrite = useCan('apps');
  const base = `/apps/${appId}/integrations/${provider}/products`;
  const [items, setItems] = useState<ProductMapping[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [tick, setTick] = useState(0);
  const [key, setKey] = useState('');
  // What each code grants: time, lifetime, or a license template of this app (a tier: its duration, entitlements, limits).
  const [kind, setKind] = useState<'time' | 'lifetime' | 'template'>('time');
  const [templates, setTemplates] = useState<Template[]>([]);
  const [templateId, setTemplateId] = useState('');
  const [days, setDays] = useState(30);
  const [perUnit, setPerUnit] = useState(1);
  const [note, setNote] = useState('');
  const action = useAction();

  useEffect(() => {
    get<{ items: ProductMapping[] }>(base).then((a) => { setItems(a.items); setError(null); }, setError);
  }, [base, tick]);
  useEffect(() => void templatesOf(appId).then(setTemplates, () => setTemplates([])), [appId]);
  // A template beyond the first 100 shows as its id; a deleted one cannot be (the server refuses while a mapping sells it).
  const templateText = (id: string) => {
    const t = templates.find((x) => x.id === id);
    return t ? `template ${t.name} (${describeTemplate(t)})` : `template ${id}`;
  };

  const add = async (event: Event) => {
    event.preventDefault();
    const grant = kind === 'template' ? { template_id: templateId } : kind === 'lifetime' ? { lifetime: true } : { minutes: Math.round(days * 1440) };
    const body = { product_key: key.trim(), ...grant, codes_per_unit: perUnit, ...(note && { note }) };
    if (await action.run(() => api('POST', base, body), `Product ${key.trim()} mapped`)) {
      setKey('');
      setNote('');
      setTick((n) => n + 1);
    }
  };
  const remove = async (m: ProductMapping) => {
    if (!(await ask({ title: 'Unmap this product?', confirmLabel: 'Unmap product', body: <p>Later sales of <code>{m.product_key}</code> make no licenses (codes already sold keep theirs).</p> }))) return;
    if (await action.run(() => api('DELETE', `${base}/${m.id}`), `Product ${m.product_key} unmapped`)) setTick((n) => n + 1);
  };

  return (
    <>
      <h3>Products</h3>
      <ErrorBox error={error ?? action.error} />
      {canWrite && (
        <form class="grid-form" onSubmit={add} aria-label={`Map a ${label} product`}>
          <label class="field">
            <span>Product or price id</span>
            <input name={`product-${provider}`} required maxLength={255} pattern="\S+" value={key} onInput={(e) => setKey(e.currentTarget.value)} />
          </label>
          <fieldset class="radios">
            <legend>Each code grants</legend>
            <label><input type="radio" name={`grant-${provider}`} checked={kind === 'time'} onChange={() => setKind('time')} /> Time</label>
            <label><input type="radio" name={`grant-${provider}`} checked={kind === 'lifetime'} onChange={() => setKind('lifetime')} /> Lifetime</label>
            <label><input type="radio" name={`grant-${provider}`} checked={kind === 'template'} onChange={() => setKind('template')} /> Template</label>
          </fieldset>
          {kind === 'template' && (
            <label class="field">
              <span>License template (duration, entitlements, limits; renewals extend by its duration)</span>
              <select name={`template-${provider}`} required value={templateId} onChange={(e) => setTemplateId(e.currentTarget.value)}>
                <option value="">Choose a template…</option>
                {templates.map((t) => <option key={t.id} value={t.id}>{t.name} — {describeTemplate(t)}</option>)}
              </select>
            </label>
          )}
          {kind === 'time' && (
            <label class="field">
              <span>Days per code (and per renewal)</span>
              <input name={`days-${provider}`} type="number" min={0.0007} step="any" required value={days} onInput={(e) => setDays(e.currentTarget.valueAsNumber)} />
            </label>
          )}
          <label class="field">
            <span>Codes per unit bought</span>
            <input name={`per-unit-${provider}`} type="number" min={1} max={100} step={1} required value={perUnit} onInput={(e) => setPerUnit(e.currentTarget.valueAsNumber)} />
          </label>
          <label class="field">
            <span>Note (optional)</span>
            <input name={`note-${provider}`} maxLength={1000} value={note} onInput={(e) => setNote(e.currentTarget.value)} />
          </label>
          <div class="actions start"><button type="submit" disabled={action.busy}>Map product</button></div>
        </form>
      )}
      {items && (
        <Table caption={`${label} products`} empty={items.length === 0}>
          <thead><tr><th scope="col">Product</th><th scope="col">Each code grants</th><th scope="col" class="num">Codes per unit</th><th scope="col">Note</th>{canWrite && <th scope="col"><span class="visually-hidden">Actions</span></th>}</tr></thead>
          <tbody>
            {items.map((m) => (
              <tr key={m.id}>
                <td class="mono">{m.product_key}</td>
                <td>{m.template_id ? templateText(m.template_id) : m.lifetime ? 'lifetime' : m.minutes ? minutesText(m.minutes) : '—'}</td>
                <td class="num">{m.codes_per_unit}</td>
                <td>{m.note ?? ''}</td>
                {canWrite && <td><button type="button" class="secondary" onClick={() => remove(m)} aria-label={`Unmap ${m.product_key}`}>Unmap</button></td>}
              </tr>
            ))}
          </tbody>
        </Table>
      )}
    </>
  );
}

/** An order's licenses (codes, what each grants, issued or revoked), asked for when the operator opens them. */
function OrderLicenses({ appId, order }: { appId: string; order: Order }) {
  const [licenses, setLicenses] = useState<OrderLicense[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [open, setOpen] = useState(false);
  const toggle = () => {
    setOpen(!open);
    if (!open && !licenses) get<Order & { licenses: OrderLicense[] }>(`/apps/${appId}/orders/${order.id}`).then((o) => setLicenses(o.licenses), setError);
  };
  return (
    <>
      <button type="button" class="secondary" aria-expanded={open} onClick={toggle} aria-label={`Licenses of order ${order.order_ref}`}>Licenses</button>
      {open && (
        <>
          <ErrorBox error={error} />
          {!licenses && !error && <p role="status">Loading…</p>}
          {licenses && (
            <ul class="plain" data-testid="order-licenses">
              {licenses.length === 0 && <li>none</li>}
              {licenses.map((l) => (
                <li key={l.license_id}>
                  <code>{l.code}</code> {l.lifetime ? 'lifetime' : l.minutes ? minutesText(l.minutes) : ''}
                  {l.renewal_minutes > 0 && <>, renewed {minutesText(l.renewal_minutes)}</>}{' '}
                  <span class={l.state === 'issued' ? 'badge ok' : 'badge bad'}>{l.state}</span>
                </li>
              ))}
            </ul>
          )}
        </>
      )}
    </>
  );
}
