import { createHash, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import type { FileRecord } from '../store/records.js';
import type { RequestContext } from './access.js';
import { keptWith } from './cache.js';
import { DomainError } from './errors.js';
import type { Services } from './service-types.js';
import { run } from './steps.js';
import { write } from './unit-of-work.js';
import { authenticateUser, type UserCredentials } from './user-auth.js';

/** Content is stored in chunks of this size: the memory bound of one upload or download. */
export const CHUNK_SIZE = 256 * 1024;

/** GET /files/{id}/download: the access check, then a file of this app (another app's is not found). */
export async function fileForDownload(s: Services, ctx: RequestContext, creds: UserCredentials, fileId: string): Promise<FileRecord> {
  await run(authenticateUser(s, ctx, creds));
  const file = await s.store.files.findById(ctx.app.id, fileId);
  if (!file) throw new DomainError('file_not_found');
  return file;
}

/**
 * Streams bytes [start, end] (inclusive) of a file, one chunk read at a time
 * and only when the consumer asks, so memory stays bounded by one chunk
 * however large the file and however slow the client.
 */
export function contentStream(s: Services, file: FileRecord, start: number, end: number): Readable {
  let seq = Math.floor(start / file.chunkSize);
  const lastSeq = Math.floor(end / file.chunkSize);
  return new Readable({
    // No read-ahead: the next chunk is read only once the socket has taken the last one (the pipe resumes on
    // 'drain'), so a download holds at most one chunk in this process however slow its reader (issue 28 item 4).
    highWaterMark: 0,
    async read() {
      try {
        if (seq > lastSeq || end < start) {
          this.push(null);
          return;
        }
        const data = await s.store.files.chunk(file.blobId, seq);
        if (!data) throw new Error(`missing chunk ${seq} of blob ${file.blobId}`);
        const base = seq * file.chunkSize;
        const from = Math.max(0, start - base);
        const to = Math.min(data.length, end - base + 1);
        seq++;
        this.push(from === 0 && to === data.length ? data : data.subarray(from, to));
      } catch (err) {
        this.destroy(err as Error);
      }
    },
  });
}

export interface StoredContent {
  blobId: string;
  size: number;
  sha256: string;
  chunkSize: number;
}

/**
 * Writes an upload stream into a new blob chunk by chunk, hashing as it goes.
 * Over `maxBytes` it stops reading and fails with payload_too_large; on any
 * failure the partial blob is removed, so nothing half-written is ever visible.
 */
export async function storeContent(s: Services, appId: string, body: AsyncIterable<Buffer | string>, maxBytes: number): Promise<StoredContent> {
  const blobId = randomUUID();
  const inFlight = uploading(s);
  inFlight.add(blobId);
  try {
    return await streamInto(s, blobId, appId, body, maxBytes);
  } finally {
    inFlight.delete(blobId);
  }
}

async function streamInto(s: Services, blobId: string, appId: string, body: AsyncIterable<Buffer | string>, maxBytes: number): Promise<StoredContent> {
  await s.store.blobs.createBlob(blobId, appId, s.clock());
  const hash = createHash('sha256');
  let size = 0;
  let seq = 0;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  const flush = async (final: boolean) => {
    while (pendingBytes >= CHUNK_SIZE || (final && pendingBytes > 0)) {
      const all = Buffer.concat(pending, pendingBytes);
      const take = Math.min(CHUNK_SIZE, all.length);
      await s.store.blobs.appendChunk(blobId, seq++, all.subarray(0, take));
      const rest = all.subarray(take);
      pending = rest.length > 0 ? [rest] : [];
      pendingBytes = rest.length;
    }
  };
  try {
    for await (const part of body) {
      const buf = typeof part === 'string' ? Buffer.from(part) : part;
      size += buf.length;
      if (size > maxBytes) throw new DomainError('payload_too_large', `The file exceeds the upload limit of ${maxBytes} bytes`);
      hash.update(buf);
      pending.push(buf);
      pendingBytes += buf.length;
      if (pendingBytes >= CHUNK_SIZE) await flush(false);
    }
    await flush(true);
    return { blobId, size, sha256: hash.digest('hex'), chunkSize: CHUNK_SIZE };
  } catch (err) {
    await s.store.blobs.deleteBlob(blobId).catch(() => undefined);
    throw err;
  }
}

/**
 * Uploads write their content outside the unit of work (store/index.ts, `ReadStore`): a process killed between
 * the first chunk and the file row's commit leaves a blob that nothing references and nobody can read. The
 * sweeper removes such blobs once older than the grace, which a live upload never reaches (one trickling for a
 * day would be cut by then anyway); uploads still streaming on this node are spared whatever their age. It runs
 * at start and every hour, through the unit of work like any write; what it removes was never visible, so it is
 * logged, not audited.
 */
export const ORPHAN_BLOB_GRACE_MS = 24 * 3600 * 1000;
const SWEEP_EVERY_MS = 3600 * 1000;

/** Blob ids this node is streaming into right now (per services: one set per node). */
const uploading = keptWith((_: Services) => new Set<string>());

/** Removes the orphaned blobs older than the grace; their ids. */
export async function sweepOrphanBlobs(s: Services, graceMs = ORPHAN_BLOB_GRACE_MS): Promise<string[]> {
  const before = s.clock() - graceMs;
  const spare = [...uploading(s)];
  const removed = await write(s, ({ tx }) => tx.files.deleteOrphanBlobs(before, spare));
  if (removed.length > 0) s.log.info({ event: 'orphan_blobs_removed', count: removed.length }, 'orphaned upload content removed');
  else s.log.debug({ event: 'orphan_blob_sweep', removed: 0 }, 'no orphaned upload content');
  return removed;
}

/** Sweeps now (in the background) and every hour; the timer is unref'd. Stop it before the store closes. */
export function startBlobSweeper(s: Services): { stop(): Promise<void> } {
  let running: Promise<unknown> = Promise.resolve();
  const sweep = () => {
    running = sweepOrphanBlobs(s).catch((err: unknown) =>
      s.log.warn({ event: 'orphan_blob_sweep_failed', cause: err instanceof Error ? err.message : String(err) }, 'could not remove orphaned upload content'),
    );
  };
  sweep();
  const timer = setInterval(sweep, SWEEP_EVERY_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
