import { useEffect, useState } from 'preact/hooks';
import { api, get, query, type Page } from '../api';
import { ask } from '../components/dialog';
import { ErrorBox, PAGE_SIZE, Pager, Section, Table, Time, useAction, usePaged } from '../components/ui';
import { useCan } from '../session';
import type { SigningKey } from '../types';

const STATUS_CLASS: Record<SigningKey['status'], string> = { active: 'badge ok', pending: 'badge', retired: 'badge bad', expired: 'badge bad' };

export function Keys({ appId }: { appId: string }) {
  const canWrite = useCan('keys');
  const [root, setRoot] = useState<{ public_key: string } | null | undefined>(undefined);
  const [rootError, setRootError] = useState<unknown>(null);
  const paged = usePaged((cursor) => get<Page<SigningKey>>(`/apps/${appId}/signing-keys` + query({ limit: PAGE_SIZE, cursor })), appId);
  const [certFor, setCertFor] = useState<string | null>(null);
  const [certificate, setCertificate] = useState('');
  const action = useAction();

  useEffect(() => {
    // allow_missing: no root yet is a state to show, not a failed request in the console.
    get<{ public_key: string | null }>(`/apps/${appId}/root-key?allow_missing=true`).then(
      (r) => setRoot(r.public_key === null ? null : { public_key: r.public_key }),
      setRootError,
    );
  }, [appId]);

  const create = async () => {
    if (await action.run(() => api('POST', `/apps/${appId}/signing-keys`), 'Signing key created (pending until certified)')) paged.reload();
  };
  const upload = async (event: Event) => {
    event.preventDefault();
    if (!certFor) return;
    if (await action.run(() => api('PUT', `/apps/${appId}/signing-keys/${certFor}/certificate`, { certificate: certificate.trim() }), 'Certificate stored: the key is active')) {
      setCertFor(null);
      setCertificate('');
      paged.reload();
    }
  };
  const retire = async (key: SigningKey) => {
    if (!(await ask({ title: `Retire ${key.kid}?`, confirmLabel: 'Retire key', body: <p>Its private key is deleted and it never signs again; clients learn to refuse answers signed with it. Make sure another key is active first.</p> }))) return;
    if (await action.run(() => api('POST', `/apps/${appId}/signing-keys/${key.kid}/retire`), `Retired ${key.kid}`)) paged.reload();
  };

  return (
    <>
      <h1>Signing keys</h1>
      <Section title="Root key">
        <ErrorBox error={rootError} />
        {root === undefined && !rootError && <p role="status">Loading…</p>}
        {root === null && <p>No root key yet. Create one offline with <code>tollgate keys init</code> (docs/deploy.md): its private half never reaches the server.</p>}
        {root && <dl class="facts"><dt>Public key</dt><dd class="mono">{root.public_key}</dd></dl>}
      </Section>
      <Section title="Signing keys" actions={canWrite && <button type="button" class="secondary" onClick={create} disabled={action.busy}>New signing key</button>}>
        <ErrorBox error={paged.error ?? action.error} />
        <Table caption="Signing keys" empty={!paged.loading && paged.items.length === 0}>
          <thead><tr><th scope="col">Key id</th><th scope="col">Status</th><th scope="col">Valid from</th><th scope="col">Valid until</th><th scope="col">Certificate</th>{canWrite && <th scope="col"><span class="visually-hidden">Actions</span></th>}</tr></thead>
          <tbody>
            {paged.items.map((k) => (
              <tr key={k.kid}>
                <td class="mono">{k.kid}</td>
                <td><span class={STATUS_CLASS[k.status]}>{k.status}</span></td>
                <td><Time at={k.not_before} /></td>
                <td><Time at={k.not_after} /></td>
                <td>{k.certificate ? <details><summary>Show</summary><code class="mono">{k.certificate}</code></details> : <span class="muted">none</span>}</td>
                {canWrite && (
                  <td><div class="actions">
                    {k.status === 'pending' && <button type="button" class="secondary" onClick={() => setCertFor(k.kid)}>Upload certificate</button>}
                    {k.status !== 'retired' && <button type="button" class="secondary" onClick={() => retire(k)} aria-label={`Retire ${k.kid}`}>Retire</button>}
                  </div></td>
                )}
              </tr>
            ))}
          </tbody>
        </Table>
        <Pager paged={paged} noun="keys" />
        {certFor && (
          <form onSubmit={upload}>
            <label class="field">
              <span>Certificate for {certFor} (base64url, made with the root key; <code>tollgate keys rotate</code> does every step)</span>
              <textarea class="mono" required maxLength={4096} value={certificate} onInput={(e) => setCertificate(e.currentTarget.value)} />
            </label>
            <div class="actions start">
              <button type="submit" disabled={action.busy}>Store certificate</button>
              <button type="button" class="secondary" onClick={() => setCertFor(null)}>Cancel</button>
            </div>
          </form>
        )}
      </Section>
    </>
  );
}
