import { Redis, type Result } from 'ioredis';
import { MemoryCounters, flights, windowEnd, windowKey, type Counters, type Slot, type Taken } from './counters.js';

declare module 'ioredis' {
  interface RedisCommander<Context> {
    tollgateTake(numberOfKeys: number, ...keysThenArgs: string[]): Result<number, Context>;
    tollgateKeep(numberOfKeys: number, ...keysThenArgs: string[]): Result<number, Context>;
    tollgateGiveBack(numberOfKeys: number, ...keys: string[]): Result<number, Context>;
  }
}

/**
 * Takes a place in flight for every slot or for none. KEYS: per slot its
 * window, its current and its previous in-flight key; ARGV: per slot its
 * limit and the current in-flight key's ttl. Returns 0, or the 1-based index
 * of a full slot, negated when places in flight alone filled it.
 */
const TAKE = `
local n = #KEYS / 3
for i = 1, n do
  local confirmed = tonumber(redis.call('GET', KEYS[3 * i - 2]) or '0')
  local flying = tonumber(redis.call('GET', KEYS[3 * i - 1]) or '0') + tonumber(redis.call('GET', KEYS[3 * i]) or '0')
  local limit = tonumber(ARGV[2 * i - 1])
  if confirmed + flying >= limit then
    if confirmed < limit then return -i end
    return i
  end
end
for i = 1, n do
  redis.call('INCR', KEYS[3 * i - 1])
  redis.call('PEXPIRE', KEYS[3 * i - 1], ARGV[2 * i])
end
return 0`;

/** A wrong credential: its places move into the windows. KEYS: per slot its window, then its in-flight key; ARGV: per slot the window's ttl. */
const KEEP = `
for i = 1, #KEYS / 2 do
  redis.call('INCR', KEYS[2 * i - 1])
  redis.call('PEXPIRE', KEYS[2 * i - 1], ARGV[i])
  if tonumber(redis.call('GET', KEYS[2 * i]) or '0') > 0 then redis.call('DECR', KEYS[2 * i]) end
end
return 0`;

/** Gives places in flight back; a key that has lapsed (gone) is left alone rather than recreated at -1 without expiry. */
const GIVE_BACK = `
for _, key in ipairs(KEYS) do
  if tonumber(redis.call('GET', key) or '0') > 0 then redis.call('DECR', key) end
end
return 0`;

/** Where the few lines about Redis going and coming go (the server's logger, once it exists). */
export interface CountersLog {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export interface RedisCountersOptions {
  /** How long one command may go unanswered before this node counts on its own (a frozen or unreachable Redis). */
  commandTimeoutMs: number;
}

/** How often a node counting on its own asks whether Redis answers again. */
const PROBE_MS = 1000;
/** How long a start waits for Redis before counting on its own. */
const CONNECT_WAIT_MS = 1000;
const PREFIX = 'tollgate:rl:';

/**
 * Many nodes with Redis (REDIS_URL): the counts are shared while Redis
 * answers. Redis is an accelerator, not a dependency: when it does not answer
 * within the command timeout, this node counts in its own memory (a breaker:
 * no request waits for Redis again until a background PING succeeds), logs
 * one warning, and one line when Redis is back. A place is given back where
 * it was taken, so a place taken in memory never frees another node's.
 */
export class RedisCounters implements Counters {
  private readonly redis: Redis;
  private readonly local = new MemoryCounters();
  private state: 'starting' | 'shared' | 'local' = 'starting';
  private prober: NodeJS.Timeout | null = null;
  private probing = false;
  private closed = false;
  private log: CountersLog | null = null;
  private readonly unlogged: [keyof CountersLog, object, string][] = [];
  private started: (() => void) | null = null;
  private readonly timeoutMs: number;

  constructor(url: string, options: RedisCountersOptions) {
    this.timeoutMs = options.commandTimeoutMs;
    this.redis = new Redis(url, {
      enableOfflineQueue: false, // not connected: fail at once (and count locally), never queue behind a dead link
      maxRetriesPerRequest: 0, // a command in flight when the link drops fails then, not after reconnection attempts
      connectTimeout: CONNECT_WAIT_MS,
      retryStrategy: (times) => Math.min(times * 100, 2000),
      scripts: { tollgateTake: { lua: TAKE }, tollgateKeep: { lua: KEEP }, tollgateGiveBack: { lua: GIVE_BACK } },
    });
    this.redis.on('error', () => undefined); // reported through the state changes below, once per outage
    this.redis.on('ready', () => void this.probe());
    this.redis.on('close', () => this.lost('the connection closed'));
  }

  /** Waits (briefly) for the first connection, so a start with Redis up shares its counts from the first request. */
  async connect(): Promise<void> {
    if (this.state !== 'starting') return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, CONNECT_WAIT_MS);
      this.started = () => (clearTimeout(timer), resolve());
    });
    this.started = null;
    if (this.state === 'starting') this.lost(`no answer within ${CONNECT_WAIT_MS} ms`);
  }

  /** The server's logger; lines from before it existed (a start with Redis down) are written now. */
  logTo(log: CountersLog): void {
    this.log = log;
    for (const [level, obj, msg] of this.unlogged.splice(0)) log[level](obj, msg);
  }

  status(): 'shared' | 'local' {
    return this.state === 'shared' ? 'shared' : 'local';
  }

  async peek(keys: readonly string[], windowMs: readonly number[], now: number): Promise<number[]> {
    if (keys.length === 0) return [];
    return this.either(
      async () => (await this.answered(this.redis.mget(...keys.map((key, i) => PREFIX + windowKey(key, windowMs[i]!, now))))).map((v) => (v === null ? 0 : Number(v))),
      () => this.local.peek(keys, windowMs, now),
    );
  }

  async increment(key: string, windowMs: number, now: number): Promise<number> {
    return this.either(async () => {
      const k = PREFIX + windowKey(key, windowMs, now);
      const result = await this.answered(this.redis.multi().incr(k).pexpire(k, ttl(windowMs, now)).exec());
      return Number(result?.[0]?.[1] ?? 1);
    }, () => this.local.increment(key, windowMs, now));
  }

  async take(slots: readonly Slot[], now: number): Promise<Taken> {
    return this.either(async () => {
      const windows = slots.map((s) => PREFIX + windowKey(s.key, s.windowMs, now));
      const inFlight = windows.map((w) => flights(w, now));
      const keys = windows.flatMap((w, i) => [w, inFlight[i]!.current, inFlight[i]!.previous]);
      const args = slots.flatMap((s, i) => [String(s.limit), String(inFlight[i]!.expires - now + 1000)]);
      // A script that ran but whose answer came too late holds places in Redis that nobody gives back:
      // they lapse with their slice (the node meanwhile counts this attempt in its own memory).
      const full = Number(await this.answered(this.redis.tollgateTake(keys.length, ...keys, ...args)));
      if (full !== 0) return { ok: false, full: Math.abs(full) - 1, inFlightOnly: full < 0 };
      const current = inFlight.map((f) => f.current);
      // Redis gone by then: the places lapse with their slice (and a wrong credential goes uncounted there).
      const settle = (command: Promise<number>) => this.answered(command).then(() => undefined, (err: Error) => this.lost(err.message));
      return {
        ok: true,
        keep: () => settle(this.redis.tollgateKeep(
          windows.length * 2, ...windows.flatMap((w, i) => [w, current[i]!]), ...slots.map((s) => String(ttl(s.windowMs, now))),
        )),
        giveBack: () => settle(this.redis.tollgateGiveBack(current.length, ...current)),
      };
    }, () => this.local.take(slots, now));
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.prober) clearInterval(this.prober);
    this.redis.disconnect();
  }

  /** Redis while it answers; this node's memory otherwise, at once while the breaker is open. */
  private async either<T>(shared: () => Promise<T>, local: () => Promise<T>): Promise<T> {
    if (this.state !== 'shared') return local();
    try {
      return await shared();
    } catch (err) {
      this.lost((err as Error).message);
      return local();
    }
  }

  /**
   * The command's answer, or a rejection when none came within the timeout
   * (a frozen or partitioned Redis; ioredis would wait for ever). Judged in
   * the check phase (setImmediate), after the event loop has read its
   * sockets: on a busy node the timer can come due while the reply already
   * waits in the socket, and that is this node's load, not a silent Redis.
   */
  private answered<T>(command: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const settle = (f: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        f();
      };
      const timer = setTimeout(() => setImmediate(() => settle(() => reject(new Error(`no answer within ${this.timeoutMs} ms`)))), this.timeoutMs);
      command.then((value) => settle(() => resolve(value)), (err: unknown) => settle(() => reject(err as Error)));
    });
  }

  private lost(cause: string): void {
    if (this.closed || this.state === 'local') return;
    this.state = 'local';
    this.say('warn', { cause }, 'redis unreachable: each node counts rate limits on its own until it answers again');
    this.prober ??= setInterval(() => void this.probe(), PROBE_MS).unref();
    this.started?.();
  }

  private async probe(): Promise<void> {
    if (this.probing || this.closed || this.state === 'shared') return;
    this.probing = true;
    try {
      if ((await this.answered(this.redis.ping())) !== 'PONG') return;
    } catch {
      return; // still away
    } finally {
      this.probing = false;
    }
    const first = this.state === 'starting';
    this.state = 'shared';
    if (this.prober) clearInterval(this.prober);
    this.prober = null;
    this.say('info', {}, first ? 'redis connected: rate limits are shared by every node' : 'redis is back: rate limits are shared by every node again');
    this.started?.();
  }

  private say(level: keyof CountersLog, obj: object, msg: string): void {
    if (this.log) this.log[level](obj, msg);
    else this.unlogged.push([level, obj, msg]);
  }
}

/** A relative expiry a second past the window's end: `now` is the service's clock, which need not be Redis's. */
const ttl = (windowMs: number, now: number): number => windowEnd(now, windowMs) - now + 1000;
