import { useState } from 'preact/hooks';
import { api, get, query, type Page } from '../api';
import { ask } from '../components/dialog';
import { ErrorBox, PAGE_SIZE, Pager, Section, Table, Time, useAction, usePaged } from '../components/ui';
import { useCan } from '../session';
import type { Template } from '../types';

const optionalInt = (text: string): number | undefined => (text.trim() === '' ? undefined : Number(text));

/** License templates (issue 24): plans set once; licenses are made from them on the Licenses page or with the CLI. */
export function Templates({ appId }: { appId: string }) {
  const canWrite = useCan('licenses');
  const paged = usePaged((cursor) => get<Page<Template>>(`/apps/${appId}/templates` + query({ limit: PAGE_SIZE, cursor })), appId);
  const [name, setName] = useState('');
  const [duration, setDuration] = useState('');
  const [lifetime, setLifetime] = useState(false);
  const [codes, setCodes] = useState('');
  const [devices, setDevices] = useState('');
  const [redeemWindow, setRedeemWindow] = useState('');
  const create = useAction();
  const row = useAction();

  const submit = async (event: Event) => {
    event.preventDefault();
    const entitlements = codes.split(',').map((c) => c.trim()).filter((c) => c !== '');
    const body = {
      name: name.trim(), ...(lifetime ? { lifetime: true } : { minutes: optionalInt(duration) }), entitlements,
      ...(optionalInt(devices) !== undefined && { max_devices: optionalInt(devices) }), ...(optionalInt(redeemWindow) !== undefined && { redeem_within_minutes: optionalInt(redeemWindow) }),
    };
    if (await create.run(() => api('POST', `/apps/${appId}/templates`, body), 'Template created')) {
      setName('');
      setCodes('');
      paged.reload();
    }
  };
  const apply = async (t: Template) => {
    if (!(await ask({ title: `Apply “${t.name}” to its licenses?`, confirmLabel: 'Apply', body: <p>Unused licenses made from it take all of its current settings; used ones its entitlements and limits (the time they added stays).</p> }))) return;
    await row.run(() => api('POST', `/apps/${appId}/templates/${t.id}/apply`), 'Template applied');
  };
  const remove = async (t: Template) => {
    if (!(await ask({ title: `Delete “${t.name}”?`, confirmLabel: 'Delete template', body: <p>Its licenses keep what they copied.</p> }))) return;
    if (await row.run(() => api('DELETE', `/apps/${appId}/templates/${t.id}`), 'Template deleted')) paged.reload();
  };

  return (
    <>
      <h1>Templates</h1>
      {canWrite && (
        <Section title="New template">
          <form onSubmit={submit} class="grid-form">
            <label class="field"><span>Name</span><input name="template-name" required maxLength={128} value={name} onInput={(e) => setName(e.currentTarget.value)} /></label>
            <label class="field"><span>Minutes each license adds</span><input name="template-minutes" type="number" min={1} disabled={lifetime} required={!lifetime} value={duration} onInput={(e) => setDuration(e.currentTarget.value)} /></label>
            <label class="field"><span>Lifetime</span><input name="template-lifetime" type="checkbox" checked={lifetime} onChange={(e) => setLifetime(e.currentTarget.checked)} /></label>
            <label class="field"><span>Entitlements (comma-separated)</span><input name="template-entitlements" placeholder="pro, export-pdf" value={codes} onInput={(e) => setCodes(e.currentTarget.value)} /></label>
            <label class="field"><span>Device limit (optional)</span><input name="template-devices" type="number" min={1} value={devices} onInput={(e) => setDevices(e.currentTarget.value)} /></label>
            <label class="field"><span>Redeemable for minutes (optional)</span><input name="template-window" type="number" min={1} value={redeemWindow} onInput={(e) => setRedeemWindow(e.currentTarget.value)} /></label>
            <div class="actions start"><button type="submit" disabled={create.busy}>Create template</button></div>
          </form>
          <ErrorBox error={create.error} />
        </Section>
      )}
      <Section title="Templates">
        <ErrorBox error={paged.error ?? row.error} />
        <Table caption="License templates" empty={!paged.loading && paged.items.length === 0}>
          <thead><tr><th scope="col">Name</th><th scope="col">Duration</th><th scope="col">Entitlements</th><th scope="col" class="num">Devices</th><th scope="col" class="num">Seats</th><th scope="col">Changed</th>{canWrite && <th scope="col"><span class="visually-hidden">Actions</span></th>}</tr></thead>
          <tbody>
            {paged.items.map((t) => (
              <tr key={t.id}>
                <td>{t.name}</td>
                <td>{t.lifetime ? 'lifetime' : `${(t.minutes ?? 0).toLocaleString()} min`}</td>
                <td class="mono">{t.entitlements.join(', ')}</td>
                <td class="num">{t.max_devices ?? 'app default'}</td>
                <td class="num">{t.max_seats ?? ''}</td>
                <td><Time at={t.updated_at} /></td>
                {canWrite && (
                  <td>
                    <button type="button" class="secondary" onClick={() => apply(t)} aria-label={`Apply ${t.name} to its licenses`}>Apply</button>{' '}
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
