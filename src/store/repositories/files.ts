import type { Queryable, Row } from '../db.js';
import type { FileRecord } from '../records.js';

const COLUMNS = 'id, app_id, name, mime_type, is_encrypted, blob_id, size, sha256, chunk_size, created_at, updated_at';

function toFile(r: Row): FileRecord {
  return {
    id: r.id as string,
    appId: r.app_id as string,
    name: r.name as string,
    mimeType: r.mime_type as string,
    isEncrypted: Number(r.is_encrypted) === 1,
    blobId: r.blob_id as string,
    size: Number(r.size),
    sha256: r.sha256 as string,
    chunkSize: Number(r.chunk_size),
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
  };
}

/**
 * File content lives in the database as numbered chunks of a blob, so every
 * node of a deployment can stream it and memory stays bounded both ways. A
 * file row points at a complete blob; a blob without a file is an upload in
 * progress (or an abandoned one).
 */
export function filesRepository(q: Queryable) {
  return {
    async createBlob(id: string, appId: string, now: number): Promise<void> {
      await q.run('INSERT INTO blobs (id, app_id, created_at) VALUES (?, ?, ?)', [id, appId, now]);
    },

    async appendChunk(blobId: string, seq: number, data: Buffer): Promise<void> {
      await q.run('INSERT INTO blob_chunks (blob_id, seq, data) VALUES (?, ?, ?)', [blobId, seq, data]);
    },

    async chunk(blobId: string, seq: number): Promise<Buffer | undefined> {
      const r = await q.one<{ data: Buffer }>('SELECT data FROM blob_chunks WHERE blob_id = ? AND seq = ?', [blobId, seq]);
      return r?.data;
    },

    async deleteBlob(id: string): Promise<void> {
      await q.run('DELETE FROM blobs WHERE id = ?', [id]);
    },

    /** Removes the blobs no file references, made before `before`, but those named in `spare`; their chunks go with them. The ids removed. */
    async deleteOrphanBlobs(before: number, spare: readonly string[]): Promise<string[]> {
      const rows = await q.all<{ id: string }>(
        `SELECT id FROM blobs WHERE created_at < ? AND NOT EXISTS (SELECT 1 FROM files WHERE files.blob_id = blobs.id)${spare.length > 0 ? ` AND id NOT IN (${spare.map(() => '?').join(', ')})` : ''} ORDER BY id`,
        [before, ...spare],
      );
      // One by one, each still unreferenced: a file row that points at a blob meanwhile keeps it.
      const removed: string[] = [];
      for (const { id } of rows) {
        const done = await q.run('DELETE FROM blobs WHERE id = ? AND NOT EXISTS (SELECT 1 FROM files WHERE files.blob_id = blobs.id)', [id]);
        if (done > 0) removed.push(id);
      }
      return removed;
    },

    async insert(f: FileRecord): Promise<void> {
      await q.run(`INSERT INTO files (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, [
        f.id, f.appId, f.name, f.mimeType, f.isEncrypted, f.blobId, f.size, f.sha256, f.chunkSize, f.createdAt, f.updatedAt,
      ]);
    },

    /** Points the file at new content; returns the blob it replaced (for deletion). */
    async replaceContent(appId: string, id: string, blobId: string, size: number, sha256: string, chunkSize: number, now: number): Promise<string | undefined> {
      const old = await q.one<{ blob_id: string }>('SELECT blob_id FROM files WHERE id = ? AND app_id = ?', [id, appId]);
      if (!old) return undefined;
      await q.run('UPDATE files SET blob_id = ?, size = ?, sha256 = ?, chunk_size = ?, updated_at = ? WHERE id = ?', [
        blobId, size, sha256, chunkSize, now, id,
      ]);
      return old.blob_id;
    },

    async updateMeta(appId: string, id: string, name: string, mimeType: string, isEncrypted: boolean, now: number): Promise<boolean> {
      return (await q.run('UPDATE files SET name = ?, mime_type = ?, is_encrypted = ?, updated_at = ? WHERE id = ? AND app_id = ?', [
        name, mimeType, isEncrypted, now, id, appId,
      ])) === 1;
    },

    async findById(appId: string, id: string): Promise<FileRecord | undefined> {
      const r = await q.one(`SELECT ${COLUMNS} FROM files WHERE id = ? AND app_id = ?`, [id, appId]);
      return r && toFile(r);
    },

    async list(appId: string): Promise<FileRecord[]> {
      const rows = await q.all(`SELECT ${COLUMNS} FROM files WHERE app_id = ? ORDER BY name, id`, [appId]);
      return rows.map(toFile);
    },

    /** Returns the blob of the deleted file, or undefined if there was none. */
    async delete(appId: string, id: string): Promise<string | undefined> {
      const r = await q.one<{ blob_id: string }>('SELECT blob_id FROM files WHERE id = ? AND app_id = ?', [id, appId]);
      if (!r) return undefined;
      await q.run('DELETE FROM files WHERE id = ?', [id]);
      return r.blob_id;
    },
  };
}

export type FilesRepository = ReturnType<typeof filesRepository>;
