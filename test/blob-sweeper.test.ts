import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ORPHAN_BLOB_GRACE_MS, storeContent, sweepOrphanBlobs } from '../src/domain/files.js';
import { ADMIN_TOKEN, harness, writableStore, type Harness, type TestApp } from './helpers.js';
import { waitFor } from './wait.js';

/**
 * The orphaned-blob sweeper (src/domain/files.ts): a blob no file references
 * goes once older than the grace; a referenced one never does, nor one this
 * node is still streaming into, whatever its age. The crash that makes such
 * blobs is test/cluster/upload-crash.test.ts.
 */
describe('the orphaned-blob sweeper', () => {
  let h: Harness;
  let app: TestApp;
  beforeEach(async () => {
    h = await harness();
    app = await h.createApp();
  });
  afterEach(async () => h.close());

  const blobIds = async () => (await h.tollgate.services.store.db.all<{ id: string }>('SELECT id FROM blobs ORDER BY id')).map((r) => r.id);

  it('removes an unreferenced blob only after the grace, with its chunks, and never a file’s', async () => {
    const res = await h.inject({
      method: 'POST', url: `/admin/v1/apps/${app.id}/files?name=kept.bin`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/octet-stream' }, payload: Buffer.alloc(300 * 1024, 3),
    });
    expect(res.statusCode, res.body).toBe(201);
    const kept = (await blobIds())[0]!;
    const blobs = writableStore(h.tollgate.services).blobs;
    await blobs.createBlob('orphan', app.id, h.clock.ms);
    await blobs.appendChunk('orphan', 0, Buffer.alloc(10, 1));

    expect(await sweepOrphanBlobs(h.tollgate.services)).toEqual([]);
    h.clock.advance(ORPHAN_BLOB_GRACE_MS - 1);
    expect(await sweepOrphanBlobs(h.tollgate.services)).toEqual([]);
    h.clock.advance(2);
    expect(await sweepOrphanBlobs(h.tollgate.services)).toEqual(['orphan']);
    expect(await blobIds()).toEqual([kept]);
    expect(await h.tollgate.services.store.db.all("SELECT seq FROM blob_chunks WHERE blob_id = 'orphan'")).toEqual([]);
    const file = await h.admin('GET', `/apps/${app.id}/files/${res.json().id}`);
    expect(file.json()).toMatchObject({ size: 300 * 1024, sha256: res.json().sha256 });
  });

  it('spares a blob this node is still streaming into, however old', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    async function* body() {
      yield Buffer.alloc(300 * 1024, 5);
      await held;
      yield Buffer.alloc(10, 5);
    }
    const storing = storeContent(h.tollgate.services, app.id, body(), 10 * 1024 * 1024);
    const { db } = h.tollgate.services.store;
    await waitFor('the first chunk to be stored', async () => (await db.all('SELECT seq FROM blob_chunks')).length > 0);
    const [streaming] = await blobIds();
    expect(streaming).toBeDefined();
    h.clock.advance(2 * ORPHAN_BLOB_GRACE_MS);
    expect(await sweepOrphanBlobs(h.tollgate.services)).toEqual([]);
    release();
    expect((await storing).blobId).toBe(streaming);
    // Done streaming, never referenced (its upload's write did not happen): an orphan like any other.
    expect(await sweepOrphanBlobs(h.tollgate.services)).toEqual([streaming]);
  });
});
