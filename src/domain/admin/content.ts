import { randomUUID } from 'node:crypto';
import type { FileRecord, VariableRecord } from '../../store/records.js';
import { DomainError, validationError } from '../errors.js';
import { storeContent, type StoredContent } from '../files.js';
import { iso } from '../membership.js';
import type { Services } from '../service-types.js';
import { Checker } from '../validation.js';
import { getApp } from './apps.js';
import { write } from '../unit-of-work.js';
import { diff, type AdminServices } from './audit.js';

export const VARIABLE_NAME = { min: 1, max: 128 };
export const VARIABLE_VALUE_MAX = 65_536;

export interface VariableView {
  name: string;
  value: string;
  updated_at: string;
}

const viewVariable = (v: VariableRecord): VariableView => ({ name: v.name, value: v.value, updated_at: iso(v.updatedAt) });

export async function putVariable(s: AdminServices, appId: string, name: string, value: string): Promise<VariableView> {
  const app = await getApp(s, appId);
  const check = new Checker();
  check.text('params.name', name, VARIABLE_NAME);
  if ([...value].length > VARIABLE_VALUE_MAX) check.add('body.value', `must be at most ${VARIABLE_VALUE_MAX} characters`);
  check.throwIfAny();
  return write(s, async ({ tx, audit, changed, emit }) => {
    const before = await tx.variables.get(appId, name);
    await tx.variables.put(appId, name, value, s.clock());
    await audit('variable.put', appId, name, { name, before: before ? summarise(before.value) : null, after: summarise(value) });
    changed({ content: app.id });
    const view = viewVariable((await tx.variables.get(appId, name))!);
    await emit('variable.updated', appId, { ...view });
    return view;
  });
}

export async function getVariable(s: Services, appId: string, name: string): Promise<VariableView> {
  await getApp(s, appId);
  const v = await s.store.variables.get(appId, name);
  if (!v) throw new DomainError('not_found', 'Variable not found');
  return viewVariable(v);
}

export async function listVariables(s: Services, appId: string): Promise<VariableView[]> {
  await getApp(s, appId);
  return (await s.store.variables.list(appId)).map(viewVariable);
}

export async function deleteVariable(s: AdminServices, appId: string, name: string): Promise<void> {
  await getApp(s, appId);
  await write(s, async ({ tx, audit, changed, emit }) => {
    const before = await tx.variables.get(appId, name);
    if (!before || !(await tx.variables.delete(appId, name))) throw new DomainError('not_found', 'Variable not found');
    await audit('variable.delete', appId, name, { name, before: summarise(before.value) });
    await emit('variable.deleted', appId, { name });
    changed({ content: appId });
  });
}

/** Audit entries keep a bounded excerpt of a value, not megabytes of it. */
function summarise(value: string): string {
  return value.length > 200 ? `${value.slice(0, 200)}… (${value.length} characters)` : value;
}

export interface FileView {
  id: string;
  name: string;
  mime_type: string;
  is_encrypted: boolean;
  size: number;
  sha256: string;
  created_at: string;
  updated_at: string;
}

export function viewFile(f: FileRecord): FileView {
  return {
    id: f.id, name: f.name, mime_type: f.mimeType, is_encrypted: f.isEncrypted, size: f.size, sha256: f.sha256,
    created_at: iso(f.createdAt), updated_at: iso(f.updatedAt),
  };
}

export interface FileMetaInput {
  name: string;
  mime_type?: string;
  is_encrypted?: boolean;
}

const MIME = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/i;

/**
 * What a write sets, each field named where the request carried it (`querystring` for an upload,
 * `body` for a change). `.` and `..` are refused like separators: a client saving a download under
 * its name would write to the directory itself or its parent (issue 30 item 5).
 */
function checkMeta(meta: Partial<FileMetaInput>, source: 'querystring' | 'body'): void {
  const check = new Checker();
  if (meta.name !== undefined) {
    const field = `${source}.name`;
    check.text(field, meta.name, { min: 1, max: 255 });
    if (meta.name.includes('/') || meta.name.includes('\\')) check.add(field, 'must not contain path separators');
    if (meta.name === '.' || meta.name === '..') check.add(field, 'must not be . or ..');
  }
  if (meta.mime_type !== undefined && !MIME.test(meta.mime_type)) check.add(`${source}.mime_type`, 'must be a media type such as application/octet-stream');
  check.throwIfAny();
}

/** Streams the upload into storage first; the file becomes visible only once its content is complete. */
export async function uploadFile(s: AdminServices, appId: string, meta: FileMetaInput, body: AsyncIterable<Buffer>, maxBytes: number): Promise<FileView> {
  await getApp(s, appId);
  checkMeta(meta, 'querystring');
  const content = await storeContent(s, appId, body, maxBytes);
  const now = s.clock();
  const file: FileRecord = {
    id: randomUUID(), appId, name: meta.name, mimeType: meta.mime_type ?? 'application/octet-stream', isEncrypted: meta.is_encrypted ?? false,
    blobId: content.blobId, size: content.size, sha256: content.sha256, chunkSize: content.chunkSize, createdAt: now, updatedAt: now,
  };
  const view = viewFile(file);
  await withContent(s, content, () => write(s, async ({ tx, audit, changed, emit }) => {
    await tx.files.insert(file);
    await emit('file.created', appId, { ...view });
    await audit('file.create', appId, file.id, { after: { name: view.name, mime_type: view.mime_type, is_encrypted: view.is_encrypted, size: view.size, sha256: view.sha256 } });
    changed({ content: appId });
  }));
  return view;
}

/**
 * Runs the write that makes streamed content visible (a file row pointing at
 * it, with its audit record). If that write fails, the blob is removed: it was
 * never visible, and nothing else will ever point at it. If the write did
 * commit (a COMMIT whose answer was lost), the file row's reference makes the
 * database refuse the removal, so a visible file never loses its content.
 */
async function withContent<T>(s: Services, content: StoredContent, makeVisible: () => Promise<T>): Promise<T> {
  try {
    return await makeVisible();
  } catch (err) {
    await s.store.blobs.deleteBlob(content.blobId).catch(() => undefined);
    throw err;
  }
}

/** Replaces a file's content, keeping its id and metadata; the old content is removed once the new one is complete. */
export async function replaceFileContent(s: AdminServices, appId: string, id: string, body: AsyncIterable<Buffer>, maxBytes: number): Promise<FileView> {
  await getApp(s, appId);
  if (!(await s.store.files.findById(appId, id))) throw new DomainError('not_found', 'File not found'); // before taking the upload
  const content = await storeContent(s, appId, body, maxBytes);
  return withContent(s, content, () => write(s, async ({ tx, audit, changed, emit }) => {
    const current = await tx.files.findById(appId, id); // the content this replaces, for the audit entry
    if (!current) throw new DomainError('not_found', 'File not found'); // deleted meanwhile
    const old = await tx.files.replaceContent(appId, id, content.blobId, content.size, content.sha256, content.chunkSize, s.clock());
    if (!old) throw new DomainError('not_found', 'File not found'); // deleted meanwhile
    await tx.files.deleteBlob(old);
    const after = (await tx.files.findById(appId, id))!;
    await audit('file.replace_content', appId, id, { before: { size: current.size, sha256: current.sha256 }, after: { size: after.size, sha256: after.sha256 } });
    changed({ content: appId });
    await emit('file.updated', appId, { ...viewFile(after) });
    return viewFile(after);
  }));
}

/** Renames a file or changes its media type or encryption flag. */
export async function updateFile(s: AdminServices, appId: string, id: string, patch: Partial<FileMetaInput>): Promise<FileView> {
  await getApp(s, appId);
  if (!(await s.store.files.findById(appId, id))) throw new DomainError('not_found', 'File not found');
  // Only what the patch sets is checked: a name stored before a rule existed must not block changing the type.
  checkMeta(patch, 'body');
  return write(s, async ({ tx, audit, changed, emit }) => {
    // Read here: the audit's `before` is what this change replaced, and what the patch leaves is kept as it is now.
    const before = await tx.files.findById(appId, id);
    if (!before) throw new DomainError('not_found', 'File not found'); // deleted meanwhile
    const meta: FileMetaInput = { name: patch.name ?? before.name, mime_type: patch.mime_type ?? before.mimeType, is_encrypted: patch.is_encrypted ?? before.isEncrypted };
    if (!(await tx.files.updateMeta(appId, id, meta.name, meta.mime_type!, meta.is_encrypted!, s.clock()))) throw new DomainError('not_found', 'File not found');
    const after = (await tx.files.findById(appId, id))!;
    await audit('file.update', appId, id, diff(
      { name: before.name, mime_type: before.mimeType, is_encrypted: before.isEncrypted },
      { name: after.name, mime_type: after.mimeType, is_encrypted: after.isEncrypted },
    ));
    changed({ content: appId });
    await emit('file.updated', appId, { ...viewFile(after) });
    return viewFile(after);
  });
}

export async function getFile(s: Services, appId: string, id: string): Promise<FileView> {
  await getApp(s, appId);
  const file = await s.store.files.findById(appId, id);
  if (!file) throw new DomainError('not_found', 'File not found');
  return viewFile(file);
}

export async function listFiles(s: Services, appId: string): Promise<FileView[]> {
  await getApp(s, appId);
  return (await s.store.files.list(appId)).map(viewFile);
}

export async function deleteFile(s: AdminServices, appId: string, id: string): Promise<void> {
  await getApp(s, appId);
  await write(s, async ({ tx, audit, changed, emit }) => {
    const before = await tx.files.findById(appId, id);
    if (!before) throw new DomainError('not_found', 'File not found');
    // The blob the deleted row pointed to when it was deleted (a replacement may have committed since the read).
    const blobId = await tx.files.delete(appId, id);
    await tx.files.deleteBlob(blobId ?? before.blobId);
    await audit('file.delete', appId, id, { before: { name: before.name, size: before.size, sha256: before.sha256 } });
    await emit('file.deleted', appId, { ...viewFile(before) });
    changed({ content: appId });
  });
}

export function parseBoolean(field: string, raw: string | undefined): boolean | undefined {
  if (raw === undefined) return undefined;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw validationError(field, 'must be true or false');
}
