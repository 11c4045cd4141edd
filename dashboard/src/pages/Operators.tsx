import { useState } from 'preact/hooks';
import { api, get, query, type Page, type Role } from '../api';
import { ask } from '../components/dialog';
import { ErrorBox, PAGE_SIZE, Pager, Section, Table, Time, useAction, usePaged } from '../components/ui';
import { ROLE_HELP, ROLES } from '../roles';
import { useCan, useSession } from '../session';
import type { OperatorRecord } from '../types';

export function Operators() {
  const canWrite = useCan('operators');
  const me = useSession().operator;
  const paged = usePaged((cursor) => get<Page<OperatorRecord>>('/operators' + query({ limit: PAGE_SIZE, cursor, with_total: true })), 'operators');
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [role, setRole] = useState<Role>('support');
  const create = useAction();
  const row = useAction();

  const submit = async (event: Event) => {
    event.preventDefault();
    if (await create.run(() => api('POST', '/operators', { username, password, role }), `Created ${username}`)) {
      setUsername('');
      setPassword('');
      paged.reload();
    }
  };
  const change = async (o: OperatorRecord, patch: Record<string, unknown>, title: string, body: preact.ComponentChildren, label: string, danger = true) => {
    if (!(await ask({ title, body, confirmLabel: label, danger }))) return;
    if (await row.run(() => api('PATCH', `/operators/${o.id}`, patch), 'Saved')) paged.reload();
  };
  const resetTotp = async (o: OperatorRecord) => {
    if (!(await ask({ title: `Reset ${o.username}'s authenticator?`, confirmLabel: 'Reset TOTP', body: <p>{o.username} signs in with the password alone until they set up a new authenticator.</p> }))) return;
    if (await row.run(() => api('POST', `/operators/${o.id}/reset_totp`), 'TOTP reset')) paged.reload();
  };
  const remove = async (o: OperatorRecord) => {
    if (!(await ask({ title: `Delete ${o.username}?`, confirmLabel: 'Delete operator', body: <p><strong>{o.username}</strong> is signed out and can no longer sign in. Their audit entries stay.</p> }))) return;
    if (await row.run(() => api('DELETE', `/operators/${o.id}`), `Deleted ${o.username}`)) paged.reload();
  };

  return (
    <>
      <h1>Operators</h1>
      {canWrite && (
        <Section title="New operator">
          <form class="grid-form" onSubmit={submit}>
            <label class="field">
              <span>Username</span>
              <input name="operator-username" required maxLength={128} autoComplete="off" value={username} onInput={(e) => setUsername(e.currentTarget.value)} />
            </label>
            <label class="field">
              <span>Initial password (12 characters or more)</span>
              <input name="operator-password" type="password" required minLength={12} autoComplete="new-password" value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
            </label>
            <label class="field">
              <span>Role</span>
              <select name="operator-role" aria-describedby="operator-role-help" value={role} onChange={(e) => setRole(e.currentTarget.value as Role)}>
                {ROLES.map((r) => <option value={r}>{r}</option>)}
              </select>
              <small class="muted" id="operator-role-help">{ROLE_HELP[role]}</small>
            </label>
            <div class="actions start"><button type="submit" disabled={create.busy}>Create operator</button></div>
          </form>
          <ErrorBox error={create.error} />
        </Section>
      )}
      <Section title="Operators">
        <ErrorBox error={paged.error ?? row.error} />
        <Table caption="Operators" empty={!paged.loading && paged.items.length === 0}>
          <thead><tr><th scope="col">Username</th><th scope="col">Role</th><th scope="col">TOTP</th><th scope="col">Status</th><th scope="col">Last sign-in</th><th scope="col">Created</th>{canWrite && <th scope="col"><span class="visually-hidden">Actions</span></th>}</tr></thead>
          <tbody>
            {paged.items.map((o) => {
              const disabled = Boolean(o.disabled ?? o.disabled_at);
              const self = o.id === me.id;
              return (
                <tr key={o.id}>
                  <td>{o.username}{self && <span class="muted"> (you)</span>}</td>
                  <td>
                    {canWrite && !self ? (
                      <label>
                        <span class="visually-hidden">Role of {o.username}</span>
                        <select value={o.role} onChange={(e) => {
                          const next = e.currentTarget.value as Role;
                          e.currentTarget.value = o.role;
                          void change(o, { role: next }, `Make ${o.username} ${next}?`, <p>{o.username} will be able to do: {ROLE_HELP[next]}.</p>, 'Change role', false);
                        }}>
                          {ROLES.map((r) => <option value={r}>{r}</option>)}
                        </select>
                      </label>
                    ) : o.role}
                  </td>
                  <td>{o.totp_enabled ? <span class="badge ok">on</span> : <span class="badge">off</span>}</td>
                  <td>{disabled ? <span class="badge bad">disabled</span> : <span class="badge ok">active</span>}</td>
                  <td><Time at={o.last_login_at} never="never" /></td>
                  <td><Time at={o.created_at} /></td>
                  {canWrite && (
                    <td>{!self && (
                      <div class="actions">
                        {disabled
                          ? <button type="button" class="secondary" onClick={() => change(o, { disabled: false }, `Enable ${o.username}?`, <p>{o.username} can sign in again.</p>, 'Enable', false)}>Enable</button>
                          : <button type="button" class="secondary" onClick={() => change(o, { disabled: true }, `Disable ${o.username}?`, <p>{o.username} is signed out and cannot sign in until enabled.</p>, 'Disable')}>Disable</button>}
                        {o.totp_enabled && <button type="button" class="secondary" onClick={() => resetTotp(o)}>Reset TOTP</button>}
                        <button type="button" class="secondary" onClick={() => remove(o)} aria-label={`Delete ${o.username}`}>Delete</button>
                      </div>
                    )}</td>
                  )}
                </tr>
              );
            })}
          </tbody>
        </Table>
        <Pager paged={paged} noun="operators" />
      </Section>
    </>
  );
}
