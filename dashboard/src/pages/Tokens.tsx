import { useState } from 'preact/hooks';
import { api, get, query, type Page, type Role } from '../api';
import { ask, reveal } from '../components/dialog';
import { ErrorBox, PAGE_SIZE, Pager, Section, Table, Time, useAction, usePaged } from '../components/ui';
import { ROLE_HELP, ROLES } from '../roles';
import { useCan, useSession } from '../session';
import type { AdminToken } from '../types';

export function Tokens() {
  const canWrite = useCan('tokens');
  const me = useSession().operator;
  const paged = usePaged((cursor) => get<Page<AdminToken>>('/tokens' + query({ limit: PAGE_SIZE, cursor, with_total: true })), 'tokens');
  const [name, setName] = useState('');
  // Nobody grants a role above their own: offer only those at or below it.
  const grantable = ROLES.slice(ROLES.indexOf(me.role));
  const [role, setRole] = useState<Role>(grantable[0]!);
  const create = useAction();
  const row = useAction();

  const submit = async (event: Event) => {
    event.preventDefault();
    let token = '';
    if (await create.run(async () => { token = (await api<{ token: string }>('POST', '/tokens', { name, role })).token; }, `Created token ${name}`)) {
      setName('');
      paged.reload();
      await reveal('Admin token created', 'Token', token, <>Shown <strong>only now</strong>. Use it as <code>Authorization: Bearer …</code> or <code>TOLLGATE_ADMIN_TOKEN</code>.</>);
    }
  };
  const revoke = async (t: AdminToken) => {
    if (!(await ask({ title: `Revoke ${t.name}?`, confirmLabel: 'Revoke token', body: <p>Scripts using the token <strong>{t.name}</strong> are refused from now on.</p> }))) return;
    if (await row.run(() => api('DELETE', `/tokens/${t.id}`), `Revoked ${t.name}`)) paged.reload();
  };

  return (
    <>
      <h1>Admin tokens</h1>
      {canWrite && (
        <Section title="New token">
          <form class="inline-form" onSubmit={submit}>
            <label class="field">
              <span>Name (who or what uses it)</span>
              <input name="token-name" required maxLength={128} value={name} onInput={(e) => setName(e.currentTarget.value)} />
            </label>
            <label class="field">
              <span>Role</span>
              <select name="token-role" aria-describedby="token-role-help" value={role} onChange={(e) => setRole(e.currentTarget.value as Role)}>
                {grantable.map((r) => <option value={r}>{r}</option>)}
              </select>
              <small class="muted" id="token-role-help">{ROLE_HELP[role]}</small>
            </label>
            <button type="submit" disabled={create.busy}>Create token</button>
          </form>
          <ErrorBox error={create.error} />
        </Section>
      )}
      <Section title="Tokens">
        <ErrorBox error={paged.error ?? row.error} />
        <Table caption="Admin tokens" empty={!paged.loading && paged.items.length === 0}>
          <thead><tr><th scope="col">Name</th><th scope="col">Role</th><th scope="col">Minted by</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Status</th>{canWrite && <th scope="col"><span class="visually-hidden">Actions</span></th>}</tr></thead>
          <tbody>
            {paged.items.map((t) => (
              <tr key={t.id}>
                <td>{t.name}</td>
                <td>{t.role ?? 'owner'}</td>
                <td>{t.operator_username ?? <span class="muted" title="TOLLGATE_ADMIN_TOKEN, the local CLI or the first start">no operator</span>}</td>
                <td><Time at={t.created_at} /></td>
                <td><Time at={t.last_used_at} never="never" /></td>
                <td>{t.revoked_at ? <span class="badge bad">revoked</span> : <span class="badge ok">active</span>}</td>
                {canWrite && <td>{!t.revoked_at && <button type="button" class="secondary" onClick={() => revoke(t)} aria-label={`Revoke ${t.name}`}>Revoke</button>}</td>}
              </tr>
            ))}
          </tbody>
        </Table>
        <Pager paged={paged} noun="tokens" />
      </Section>
    </>
  );
}
