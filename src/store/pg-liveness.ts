import { StoreUnavailable } from './db.js';

/**
 * How long the pool may go without an answer from PostgreSQL while a
 * statement or a checkout waits on it before PostgreSQL is asked, on a
 * connection of its own, whether it still answers. Waiting alone proves
 * nothing: a long admin query, a lock wait or a saturated pool wait on a
 * healthy server too.
 */
export const STALL_MS = 500;
/** How long that question (SELECT 1) may go unanswered before the database counts as frozen. */
export const PROBE_MS = 1000;
const TICK_MS = 250;

/** What the probe found: an answer of any kind (even an error) means a server that runs. */
export type ProbeResult = 'alive' | 'silent';

/**
 * A frozen PostgreSQL (SIGSTOP, a host that hangs, a path that drops every
 * packet) answers nothing: the pool's idle connections look fine, statements
 * on them wait for the client-side query timeout, and a new connection waits
 * for the connect timeout. Tightening those would also cut slow statements
 * that would have succeeded. Instead, while something waits and nothing has
 * answered for STALL_MS, a probe asks; if it too goes unanswered for
 * PROBE_MS, every statement and checkout still waiting fails at once with
 * StoreUnavailable (503), and so does every new one, until a probe (one per
 * tick) is answered again. So a request that cannot get a working
 * connection is answered within STALL_MS + TICK_MS + PROBE_MS (1.75 s) of
 * the last answer, and one on a healthy server is never cut.
 */
export class Liveness {
  private waiting = 0;
  /** The last answer, or when the current wait began if later. */
  private since = performance.now();
  private down: StoreUnavailable | null = null;
  private probing = false;
  private readonly abandon = new Set<(err: Error) => void>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly probe: (timeoutMs: number) => Promise<ProbeResult>,
    private readonly location: string,
  ) {
    // Judged in the check phase, after the event loop has read its sockets: on a busy node the answers that would
    // prove the server alive may already be waiting there when the timer comes due.
    this.timer = setInterval(() => setImmediate(() => void this.tick()), TICK_MS).unref();
  }

  /** True while the database is taken for frozen (new work fails at once). */
  get frozen(): boolean {
    return this.down !== null;
  }

  /**
   * Waits for `start()`'s outcome, unless the database is (or is found)
   * frozen first: then StoreUnavailable at once, and the operation's late
   * outcome goes to `late` (a checkout's client to release, a statement's
   * error to swallow). `answers` says which outcomes came from the server.
   */
  guard<T>(start: () => Promise<T>, late: (value: T | undefined) => void, answers: (err: unknown) => boolean): Promise<T> {
    if (this.down) return Promise.reject(this.down);
    const op = start();
    if (this.waiting++ === 0) this.since = performance.now();
    return new Promise<T>((resolve, reject) => {
      let done = false;
      const abandon = (err: Error) => {
        if (done) return;
        done = true;
        reject(err);
      };
      this.abandon.add(abandon);
      const settled = (answered: boolean) => {
        this.waiting--;
        this.abandon.delete(abandon);
        if (answered) this.since = performance.now();
      };
      op.then(
        (value) => {
          settled(true);
          if (done) late(value);
          else (done = true), resolve(value);
        },
        (err: unknown) => {
          settled(answers(err));
          if (done) late(undefined);
          else (done = true), reject(err as Error);
        },
      );
    });
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private async tick(): Promise<void> {
    if (this.probing) return;
    if (!this.down && (this.waiting === 0 || performance.now() - this.since < STALL_MS)) return;
    this.probing = true;
    const asked = performance.now();
    try {
      // Any other answer meanwhile proves the server alive too: a probe slow on a loaded node is not a freeze.
      if ((await this.probe(PROBE_MS)) === 'alive' || this.since > asked) {
        this.down = null;
        this.since = performance.now();
        return;
      }
      this.down ??= new StoreUnavailable(`PostgreSQL at ${this.location}: no answer within ${STALL_MS + PROBE_MS} ms (frozen or unreachable)`);
      for (const abandon of this.abandon) abandon(this.down);
      this.abandon.clear();
    } finally {
      this.probing = false;
    }
  }
}
