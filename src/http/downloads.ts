/**
 * Downloads in flight (issue 28 item 4): what they hold in this process, and
 * the readers too slow to keep. A download's stream reads one stored chunk
 * only when the socket has taken the previous one (domain/files.ts), so each
 * holds at most about one chunk here however slow its reader; the kernel's
 * socket buffer is outside the process. A reader that takes less than
 * DOWNLOAD_MIN_BYTES_PER_SECOND over a DOWNLOAD_GRACE_MS window is cut: it
 * would otherwise keep its connection, its chunk and its place forever.
 */
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import type { FastifyBaseLogger } from 'fastify';

export interface DownloadPace {
  /** 0: never cut. */
  minBytesPerSecond: number;
  graceMs: number;
}

interface Watched {
  stream: Readable;
  socket: Socket;
}

export class Downloads {
  private readonly active = new Set<Watched>();
  /** Downloads cut for being too slow since start (a test and an operator's log search count them). */
  cut = 0;

  constructor(private readonly pace: DownloadPace) {}

  get inFlight(): number {
    return this.active.size;
  }

  /** Bytes the downloads in flight hold in this process (their streams' queues and their sockets' unsent writes): in all, the most one holds, and how many hold any. */
  buffered(): { total: number; largest: number; holding: number } {
    let total = 0;
    let largest = 0;
    let holding = 0;
    for (const w of this.active) {
      const n = w.stream.readableLength + w.socket.writableLength;
      total += n;
      largest = Math.max(largest, n);
      if (n > 0) holding++;
    }
    return { total, largest, holding };
  }

  /** Follows one download's stream until its response closes; cuts its connection if the reader falls below the floor. */
  watch(stream: Readable, res: ServerResponse, log: FastifyBaseLogger): void {
    const socket = res.socket;
    // An injected request (tests) has no network socket to measure or cut.
    if (!socket || typeof socket.bytesWritten !== 'number' || typeof socket.destroy !== 'function') return;
    const w: Watched = { stream, socket };
    this.active.add(w);
    let timer: NodeJS.Timeout | undefined;
    if (this.pace.minBytesPerSecond > 0) {
      const floor = (this.pace.minBytesPerSecond * this.pace.graceMs) / 1000;
      // Bytes the kernel has taken: written, minus what still waits in the socket's own queue.
      const delivered = () => socket.bytesWritten - socket.writableLength;
      let last = delivered();
      timer = setInterval(() => {
        const now = delivered();
        // Judged only while bytes wait for the reader: a window spent waiting on the store is the server's slowness, not the reader's.
        if (now - last < floor && socket.writableLength > 0) {
          this.cut++;
          log.info({ event: 'download_cut', bytesInWindow: now - last, windowMs: this.pace.graceMs, minBytesPerSecond: this.pace.minBytesPerSecond }, 'download cut: the reader is slower than DOWNLOAD_MIN_BYTES_PER_SECOND');
          socket.destroy();
          return;
        }
        last = now;
      }, this.pace.graceMs);
      timer.unref();
    }
    res.once('close', () => {
      if (timer) clearInterval(timer);
      this.active.delete(w);
    });
  }
}
