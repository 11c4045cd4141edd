import type { Server } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { MessageBus } from '../domain/store-failures.js';

/** Where the outage lines go (the server's logger). */
export interface OutageLog {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export interface OutageTiming {
  /** How often, during an outage, the database is asked whether it answers again. */
  probeMs: number;
  /** At most one "still unavailable" line per this many ms. */
  summaryMs: number;
  /** How long one probe may take before it counts as "no". */
  probeWithinMs: number;
}

const TIMING: OutageTiming = { probeMs: 1000, summaryMs: 10_000, probeWithinMs: 1500 };

/**
 * The log of a database outage: lines on changes of state, not one per
 * request. A database that is down can refuse hundreds of requests a second
 * (466 warnings and 150 readiness errors in 40 s on one node), which buries
 * the one line that matters and costs disk on the way. The first refusal
 * after the database answered logs one warning with its cause; while it
 * lasts, at most one summary per `summaryMs` with the count; when a probe
 * answers and nothing was refused since the last one, one info line with how
 * many requests were refused. As for Redis (src/store/redis-counters.ts).
 * A node with no traffic learns of the outage from its cache bus (watchBus):
 * the same one warning, and the same one line when it answers again.
 */
export class StoreOutage {
  private down = false;
  private total = 0;
  private sinceSummary = 0;
  private sinceProbe = 0;
  private cause = '';
  private summaryAt = 0;
  private timer: NodeJS.Timeout | null = null;
  private probing = false;

  constructor(
    private readonly log: OutageLog,
    private readonly ping: () => Promise<boolean>,
    private readonly timing: OutageTiming = TIMING,
  ) {}

  /** A request answered 503 because the database cannot serve now. */
  refused(cause: string, reqId?: string): void {
    this.total++;
    this.sinceSummary++;
    this.sinceProbe++;
    this.cause = cause;
    if (!this.down) this.begin(cause, reqId);
  }

  /** The database stopped answering with no request refused (yet): its connections dropped and a probe failed. */
  lost(cause: string): void {
    if (this.down) return;
    this.cause = cause;
    this.begin(cause);
  }

  private begin(cause: string, reqId?: string): void {
    this.down = true;
    this.summaryAt = Date.now();
    this.sinceSummary = 0;
    this.log.warn({ reqId, cause }, 'database unavailable');
    this.timer = setInterval(() => void this.tick(), this.timing.probeMs).unref();
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private async tick(): Promise<void> {
    const now = Date.now();
    if (this.sinceSummary > 0 && now - this.summaryAt >= this.timing.summaryMs) {
      this.log.warn({ refused: this.sinceSummary, seconds: Math.round((now - this.summaryAt) / 1000), cause: this.cause }, 'database still unavailable');
      this.sinceSummary = 0;
      this.summaryAt = now;
    }
    // Requests still refused: not back, whatever a probe says (a locked SQLite file still answers reads).
    const quiet = this.sinceProbe === 0;
    this.sinceProbe = 0;
    if (!quiet || this.probing) return;
    this.probing = true;
    try {
      if (!(await within(this.ping(), this.timing.probeWithinMs)) || this.sinceProbe > 0 || !this.down) return;
    } finally {
      this.probing = false;
    }
    this.close();
    this.down = false;
    this.log.info({ refused: this.total }, 'database answers again');
    this.total = 0;
  }
}

/** Whether `check` resolves true within `ms`; a check still running after that counts as "no". */
export function within(check: Promise<boolean>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  return Promise.race([check.catch(() => false), late]).finally(() => clearTimeout(timer));
}

/** One outage log per server (every route scope of a server shares its Node server). */
const outages = new WeakMap<Server, StoreOutage>();

export function watchStore(app: FastifyInstance, ping: () => Promise<boolean>, bus?: MessageBus): StoreOutage {
  const outage = new StoreOutage(app.log, ping);
  if (bus) watchBus(bus, outage, app.log, ping);
  outages.set(app.server, outage);
  app.addHook('onClose', (_instance, done) => {
    outage.close();
    done();
  });
  return outage;
}

/**
 * The cache bus (PostgreSQL LISTEN, one connection per node) drops when the
 * database goes away, or alone (its backend terminated, a proxy's idle cut).
 * Which one is asked of the database: gone, it is the database's outage (its
 * warning now, even with no request to refuse, and its line when it answers);
 * still answering, only the bus was lost: one warning (other nodes' changes
 * reach this node only through the cache TTL meanwhile) and one line when it
 * listens again. A drop healed before the answer came is not logged.
 */
export function watchBus(bus: MessageBus, outage: StoreOutage, log: OutageLog, ping: () => Promise<boolean>, withinMs = TIMING.probeWithinMs): void {
  let state: 'up' | 'asking' | 'database' | 'bus' = 'up';
  bus.onConnection((up, cause = 'the connection closed') => {
    if (up) {
      if (state === 'bus') log.info({}, 'cache bus listening again: changes made on other nodes reach this node at once again');
      state = 'up';
      return;
    }
    state = 'asking';
    void within(ping(), withinMs).then((answers) => {
      if (state !== 'asking') return;
      if (!answers) {
        state = 'database';
        outage.lost(cause);
        return;
      }
      state = 'bus';
      log.warn({ cause }, 'cache bus lost: changes made on other nodes reach this node only as its caches expire until it listens again');
    });
  });
}

/** Reports a 503 for the database to the server's outage log (or, without one, logs it as before). */
export function storeRefused(request: FastifyRequest, cause: string): void {
  const outage = outages.get(request.server.server);
  if (outage) outage.refused(cause, request.id);
  else request.log.warn({ reqId: request.id, cause }, 'database unavailable');
}
