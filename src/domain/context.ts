import type { Store } from '../store/index.js';
import type { CacheEntry } from './cache.js';

/** The application object of SPEC 2.3, exactly its fields. */
export interface ApplicationView {
  id: string;
  name: string;
  variables: { name: string; value: string }[];
  files: { id: string; name: string; mime_type: string; is_encrypted: boolean }[];
  /** The same object serialised once, reused by every /app_context answer until it changes. */
  json: string;
  /** Its length in UTF-8 bytes (an answer's length is known without measuring it again). */
  jsonBytes: number;
}

/** The cache registry's loader (caches.ts): the application object of an app, serialised once. */
export async function loadApplication(store: Store, appId: string): Promise<CacheEntry<ApplicationView>> {
  const [app, variables, files] = await Promise.all([store.apps.findById(appId), store.variables.list(appId), store.files.list(appId)]);
  const view = {
    id: appId,
    name: app?.name ?? '',
    variables: variables.map((v) => ({ name: v.name, value: v.value })),
    files: files.map((f) => ({ id: f.id, name: f.name, mime_type: f.mimeType, is_encrypted: f.isEncrypted })),
  };
  const json = JSON.stringify(view);
  return { value: { ...view, json, jsonBytes: Buffer.byteLength(json) }, validUntil: Infinity };
}
