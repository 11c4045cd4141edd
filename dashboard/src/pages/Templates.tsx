/**
 * License templates (issue 24): what a license made from one grants (time or lifetime,
 * entitlements, device and seat limits, a redeem window). Editing one changes future licenses;
 * "Apply to existing" copies it onto the licenses already made from it, after a dialog.
 */
import { useState } from 'preact/hooks';
import { api, get, query, type Page } from '../api';
import { ask } from '../components/dialog';
import { ErrorBox, minutesText, notify, Pager, Section, Table, Time, useAction, usePaged } from '../components/ui';
import { Link } from '../router';
import { useCan } from '../session';
import type { Template } from '../types';

/** Every template of an app, for pickers and the licenses' template column (a page of 100 is plenty per app). */
export async function templatesOf(appId: string): Promise<Template[]> {
  return (await get<Page<Template>>(`/apps/${appId}/templates?limit=100`)).items;
}

export function describeTemplate(t: Template): string {
  const parts = [t.lifetime ? 'lifetime' : t.minutes ? minutesText(t.minutes) : 'no time'];
  if (t.entitlements.length) parts.push(t.entitlements.join(', '));
  if (t.max_devices !== null) parts.push(`${t.max_devices} devices`);
  if (t.max_seats !== null) parts.push(`${t.max_seats} seats`);
  return parts.join(' · ');
}

/** A whole number from an optional input: '' is null (the setting is not set). */
const optional = (text: string, scale = 1): number | null => (text.trim() === '' ? null : Math.round(Number(text) * scale));

interface Draft { name: string; lifetime: boolean; days: string; entitlements: string; maxDevices: string; redeemDays: string; maxSeats: string; heartbeat: string }

const EMPTY: Draft = { name: '', lifetime: false, days: '30', entitlements: '', maxDevices: '', redeemDays: '', maxSeats: '', heartbeat: '' };

function draftOf(t: Template): Draft {
  const text = (n: number | null, scale = 1) => (n === null ? '' : String(n / scale));
  return {
    name: t.name, lifetime: t.lifetime, days: text(t.minutes, 1440), entitlements: t.entitlements.join(', '), maxDevices: text(t.max_devices),
    redeemDays: text(t.redeem_within_minutes, 1440), maxSeats: text(t.max_seats), heartbeat: text(t.heartbeat_seconds),
  };
}

function bodyOf(d: Draft): Record<string, unknown> {
  return {
    name: d.name.trim(),
    lifetime: d.lifetime,
    minutes: d.lifetime ? null : optional(d.days, 1440),
    entitlements: [...new Set(d.entitlements.split(/[\s,]+/).filter(Boolean))],
    max_devices: optional(d.maxDevices),
    redeem_within_minutes: optional(d.redeemDays, 1440),
    max_seats: optional(d.maxSeats),
    heartbeat_seconds: optional(d.heartbeat),
  };
}

function TemplateForm({ initial, submitLabel, busy, onSubmit, onCancel }: { initial: Draft; submitLabel: string; busy: boolean; onSubmit: (d: Draft) => void; onCancel?: () => void }) {
  const [d, setD] = useState<Draft>(initial);
  const set = (change: Partial<Draft>) => setD({ ...d, ...change });
  return (
    <form onSubmit={(e) => { e.preventDefault(); onSubmit(d); }}>
      <div class="grid-form">
        <label class="field">
          <span>Name</span>
          <input name="template-name" required maxLength={128} value={d.name} onInput={(e) => set({ name: e.currentTarget.value })} />
        </label>
        <fieldset class="radios">
          <legend>Grants</legend>
          <label><input type="radio" name="template-kind" checked={!d.lifetime} onChange={() => set({ lifetime: false })} /> Time</label>
          <label><input type="radio" name="template-kind" checked={d.lifetime} onChange={() => set({ lifetime: true })} /> Lifetime</label>
        </fieldset>
        {!d.lifetime && (
          <label class="field">
            <span>Days of membership</span>
            <input name="template-days" type="number" min={0.0007} step="any" required value={d.days} onInput={(e) => set({ days: e.currentTarget.value })} />
          </label>
        )}
        <label class="field">
          <span>Entitlements (comma-separated codes)</span>
          <input name="template-entitlements" maxLength={6500} value={d.entitlements} onInput={(e) => set({ entitlements: e.currentTarget.value })} placeholder="pro, export.pdf" />
        </label>
        <label class="field">
          <span>Devices per user (empty: the application’s)</span>
          <input name="template-max-devices" type="number" min={1} max={1000} step={1} value={d.maxDevices} onInput={(e) => set({ maxDevices: e.currentTarget.value })} />
        </label>
        <label class="field">
          <span>Redeem within days (empty: no limit)</span>
          <input name="template-redeem-days" type="number" min={0.0007} step="any" value={d.redeemDays} onInput={(e) => set({ redeemDays: e.currentTarget.value })} />
        </label>
        <label class="field">
          <span>Floating seats (empty: none)</span>
          <input name="template-max-seats" type="number" min={1} max={100000} step={1} value={d.maxSeats} onInput={(e) => set({ maxSeats: e.currentTarget.value })} />
        </label>
        <label class="field">
          <span>Seat heartbeat seconds (empty: the server’s)</span>
          <input name="template-heartbeat" type="number" min={10} max={86400} step={1} value={d.heartbeat} onInput={(e) => set({ heartbeat: e.currentTarget.value })} />
        </label>
      </div>
      <div class="actions">
        {onCancel && <button type="button" class="secondary" onClick={onCancel}>Cancel</button>}
        <button type="submit" disabled={busy}>{submitLabel}</button>
      </div>
    </form>
  );
}

export function Templates({ appId }: { appId: string }) {
  const canWrite = useCan('licenses');
  const paged = usePaged((cursor) => get<Page<Template>>(`/apps/${appId}/templates` + query({ limit: 25, cursor })), appId);
  const [editing, setEditing] = useState<Template | null>(null);
  const [formKey, setFormKey] = useState(0);
  const create = useAction();
  const row = useAction();

  const add = async (d: Draft) => {
    if (await create.run(() => api('POST', `/apps/${appId}/templates`, bodyOf(d)), `Template ${d.name.trim()} created`)) {
      setFormKey((n) => n + 1);
      paged.reload();
    }
  };
  const save = async (d: Draft) => {
    if (!editing) return;
    if (await row.run(() => api('PATCH', `/apps/${appId}/templates/${editing.id}`, bodyOf(d)), `Template ${d.name.trim()} saved`)) {
      setEditing(null);
      paged.reload();
    }
  };
  const apply = async (t: Template) => {
    const ok = await ask({
      title: `Apply ${t.name} to its licenses?`, confirmLabel: 'Apply to existing', danger: false,
      body: <p>Every license made from <strong>{t.name}</strong> takes its current settings: unused codes all of them, used codes its entitlements and limits (their users’ grants are rewritten).</p>,
    });
    if (!ok) return;
    let answer = { unused_licenses: 0, used_licenses: 0, users: 0 };
    if (await row.run(async () => { answer = await api('POST', `/apps/${appId}/templates/${t.id}/apply`); })) {
      notify(`Applied: ${answer.unused_licenses} unused and ${answer.used_licenses} used licenses, ${answer.users} users`);
    }
  };
  const remove = async (t: Template) => {
    if (!(await ask({ title: `Delete ${t.name}?`, confirmLabel: 'Delete template', body: <p>Licenses made from it keep what they copied; no new ones can be made from it.</p> }))) return;
    if (await row.run(() => api('DELETE', `/apps/${appId}/templates/${t.id}`), `Template ${t.name} deleted`)) paged.reload();
  };

  return (
    <>
      <h1>License templates</h1>
      <p class="muted">Make licenses from a template on the <Link href={`/apps/${appId}/licenses`}>licenses page</Link>.</p>
      {canWrite && (
        <Section title="New template">
          <TemplateForm key={formKey} initial={EMPTY} submitLabel="Create template" busy={create.busy} onSubmit={add} />
          <ErrorBox error={create.error} />
        </Section>
      )}
      {editing && (
        <Section title={`Edit ${editing.name}`}>
          <p class="muted">A change applies to licenses made from now on; “Apply to existing” copies it onto the others.</p>
          <TemplateForm key={editing.id} initial={draftOf(editing)} submitLabel="Save template" busy={row.busy} onSubmit={save} onCancel={() => setEditing(null)} />
        </Section>
      )}
      <Section title="Templates">
        <ErrorBox error={paged.error ?? row.error} />
        <Table caption="License templates" empty={!paged.loading && paged.items.length === 0}>
          <thead><tr><th scope="col">Name</th><th scope="col">Grants</th><th scope="col">Redeem within</th><th scope="col">Heartbeat</th><th scope="col">Changed</th>{canWrite && <th scope="col"><span class="visually-hidden">Actions</span></th>}</tr></thead>
          <tbody>
            {paged.items.map((t) => (
              <tr key={t.id}>
                <td><Link href={`/apps/${appId}/licenses?template=${t.id}`}>{t.name}</Link></td>
                <td>{describeTemplate(t)}</td>
                <td>{t.redeem_within_minutes ? minutesText(t.redeem_within_minutes) : 'no limit'}</td>
                <td>{t.heartbeat_seconds ? `${t.heartbeat_seconds} s` : 'default'}</td>
                <td><Time at={t.updated_at} /></td>
                {canWrite && (
                  <td class="row-actions">
                    <button type="button" class="secondary" onClick={() => setEditing(t)} aria-label={`Edit ${t.name}`}>Edit</button>
                    <button type="button" class="secondary" onClick={() => apply(t)} aria-label={`Apply to existing: ${t.name}`}>Apply to existing</button>
                    <button type="button" class="secondary" onClick={() => remove(t)} aria-label={`Delete ${t.name}`}>Delete</button>
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </Table>
        <Pager paged={paged} noun="templates" />
      </Section>
    </>
  );
}
