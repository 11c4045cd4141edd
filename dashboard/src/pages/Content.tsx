import { useEffect, useRef, useState } from 'preact/hooks';
import { api, get, upload, type Page } from '../api';
import { ask } from '../components/dialog';
import { ErrorBox, Section, Table, Time, useAction } from '../components/ui';
import { useCan } from '../session';
import type { StoredFile, Variable } from '../types';

export function Content({ appId }: { appId: string }) {
  return (
    <>
      <h1>Variables and files</h1>
      <Variables appId={appId} />
      <Files appId={appId} />
    </>
  );
}

function useList<T>(path: string): { items: T[]; error: unknown; reload(): void } {
  const [items, setItems] = useState<T[]>([]);
  const [error, setError] = useState<unknown>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    get<Page<T>>(path).then((page) => { setItems(page.items); setError(null); }, setError);
  }, [path, tick]);
  return { items, error, reload: () => setTick((n) => n + 1) };
}

function Variables({ appId }: { appId: string }) {
  const canWrite = useCan('content');
  const list = useList<Variable>(`/apps/${appId}/variables`);
  const [name, setName] = useState('');
  const [value, setValue] = useState('');
  const [editing, setEditing] = useState(false);
  const action = useAction();
  const nameInput = useRef<HTMLInputElement>(null);

  const save = async (event: Event) => {
    event.preventDefault();
    if (await action.run(() => api('PUT', `/apps/${appId}/variables/${encodeURIComponent(name)}`, { value }), `Saved ${name}`)) {
      setName('');
      setValue('');
      setEditing(false);
      list.reload();
    }
  };
  const edit = (v: Variable) => {
    setName(v.name);
    setValue(v.value);
    setEditing(true);
    nameInput.current?.focus();
  };
  const remove = async (v: Variable) => {
    if (!(await ask({ title: `Delete ${v.name}?`, confirmLabel: 'Delete variable', body: <p>Clients stop receiving the variable <strong>{v.name}</strong>.</p> }))) return;
    if (await action.run(() => api('DELETE', `/apps/${appId}/variables/${encodeURIComponent(v.name)}`), `Deleted ${v.name}`)) list.reload();
  };

  return (
    <Section title="Variables">
      {canWrite && (
        <form onSubmit={save} class="grid-form">
          <label class="field">
            <span>Name</span>
            <input ref={nameInput} name="variable-name" required maxLength={128} value={name} readOnly={editing} onInput={(e) => setName(e.currentTarget.value)} />
          </label>
          <label class="field">
            <span>Value</span>
            <input name="variable-value" value={value} onInput={(e) => setValue(e.currentTarget.value)} />
          </label>
          <div class="actions start">
            <button type="submit" disabled={action.busy}>{editing ? 'Save variable' : 'Add variable'}</button>
            {editing && <button type="button" class="secondary" onClick={() => { setEditing(false); setName(''); setValue(''); }}>Cancel</button>}
          </div>
        </form>
      )}
      <ErrorBox error={list.error ?? action.error} />
      <Table caption="Variables" empty={list.items.length === 0}>
        <thead><tr><th scope="col">Name</th><th scope="col">Value</th><th scope="col">Changed</th>{canWrite && <th scope="col"><span class="visually-hidden">Actions</span></th>}</tr></thead>
        <tbody>
          {list.items.map((v) => (
            <tr key={v.name}>
              <td class="mono">{v.name}</td>
              <td class="mono">{v.value.length > 120 ? v.value.slice(0, 120) + '…' : v.value}</td>
              <td><Time at={v.updated_at} /></td>
              {canWrite && (
                <td><div class="actions">
                  <button type="button" class="secondary" onClick={() => edit(v)} aria-label={`Edit ${v.name}`}>Edit</button>
                  <button type="button" class="secondary" onClick={() => remove(v)} aria-label={`Delete ${v.name}`}>Delete</button>
                </div></td>
              )}
            </tr>
          ))}
        </tbody>
      </Table>
    </Section>
  );
}

function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 ** 2) return `${(bytes / 1024).toFixed(1)} KiB`;
  if (bytes < 1024 ** 3) return `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
  return `${(bytes / 1024 ** 3).toFixed(2)} GiB`;
}

function Files({ appId }: { appId: string }) {
  const canWrite = useCan('content');
  const list = useList<StoredFile>(`/apps/${appId}/files`);
  const [file, setFile] = useState<File | null>(null);
  const [encrypted, setEncrypted] = useState(false);
  const [progress, setProgress] = useState<{ label: string; sent: number; total: number } | null>(null);
  const action = useAction();
  const picker = useRef<HTMLInputElement>(null);
  const replacePicker = useRef<HTMLInputElement>(null);
  const [replacing, setReplacing] = useState<StoredFile | null>(null);

  const send = (label: string, work: (onProgress: (sent: number, total: number) => void) => Promise<unknown>, done: string) =>
    action.run(async () => {
      setProgress({ label, sent: 0, total: 1 });
      try {
        await work((sent, total) => setProgress({ label, sent, total }));
      } finally {
        setProgress(null);
      }
    }, done);

  const submit = async (event: Event) => {
    event.preventDefault();
    if (!file) return;
    const params = new URLSearchParams({ name: file.name, mime_type: file.type || 'application/octet-stream', is_encrypted: String(encrypted) });
    const ok = await send(file.name, (onProgress) => upload('POST', `/apps/${appId}/files?${params}`, file, onProgress), `Uploaded ${file.name}`);
    if (ok) {
      setFile(null);
      if (picker.current) picker.current.value = '';
      list.reload();
    }
  };

  const startReplace = (target: StoredFile) => {
    setReplacing(target);
    replacePicker.current?.click();
  };
  const replace = async (chosen: File | undefined) => {
    const target = replacing;
    if (replacePicker.current) replacePicker.current.value = '';
    if (!target || !chosen) return;
    if (!(await ask({ title: `Replace ${target.name}?`, confirmLabel: 'Replace content', body: <p>Clients downloading <strong>{target.name}</strong> get the content of <strong>{chosen.name}</strong> ({size(chosen.size)}) from now on.</p> }))) return;
    if (await send(target.name, (onProgress) => upload('PUT', `/apps/${appId}/files/${target.id}/content`, chosen, onProgress), `Replaced ${target.name}`)) list.reload();
  };
  const remove = async (target: StoredFile) => {
    if (!(await ask({ title: `Delete ${target.name}?`, confirmLabel: 'Delete file', body: <p>The file and its content are deleted; clients can no longer download it.</p> }))) return;
    if (await action.run(() => api('DELETE', `/apps/${appId}/files/${target.id}`), `Deleted ${target.name}`)) list.reload();
  };

  return (
    <Section title="Files">
      {canWrite && (
        <form onSubmit={submit} class="inline-form">
          <label class="field">
            <span>File to upload</span>
            <input ref={picker} type="file" name="file" required onChange={(e) => setFile(e.currentTarget.files?.[0] ?? null)} />
          </label>
          <label class="check">
            <input type="checkbox" checked={encrypted} onChange={(e) => setEncrypted(e.currentTarget.checked)} />
            <span>Encrypted by you (clients decrypt it)</span>
          </label>
          <button type="submit" disabled={!file || progress !== null}>Upload</button>
        </form>
      )}
      <input ref={replacePicker} type="file" class="visually-hidden" tabIndex={-1} aria-hidden="true" onChange={(e) => void replace(e.currentTarget.files?.[0])} />
      {progress && (
        <label class="field" data-testid="upload-progress">
          <span>Uploading {progress.label}: {Math.round((progress.sent / Math.max(progress.total, 1)) * 100)}%</span>
          <progress max={Math.max(progress.total, 1)} value={progress.sent} />
        </label>
      )}
      <ErrorBox error={list.error ?? action.error} />
      <Table caption="Files" empty={list.items.length === 0}>
        <thead><tr><th scope="col">Name</th><th scope="col" class="num">Size</th><th scope="col">Type</th><th scope="col">SHA-256</th><th scope="col">Changed</th>{canWrite && <th scope="col"><span class="visually-hidden">Actions</span></th>}</tr></thead>
        <tbody>
          {list.items.map((f) => (
            <tr key={f.id}>
              <td>{f.name} {f.is_encrypted && <span class="badge">encrypted</span>}</td>
              <td class="num">{size(f.size)}</td>
              <td class="mono">{f.mime_type}</td>
              <td class="mono" title={f.sha256}>{f.sha256.slice(0, 12)}…</td>
              <td><Time at={f.updated_at} /></td>
              {canWrite && (
                <td><div class="actions">
                  <button type="button" class="secondary" onClick={() => startReplace(f)} aria-label={`Replace ${f.name}`}>Replace…</button>
                  <button type="button" class="secondary" onClick={() => remove(f)} aria-label={`Delete ${f.name}`}>Delete</button>
                </div></td>
              )}
            </tr>
          ))}
        </tbody>
      </Table>
    </Section>
  );
}
