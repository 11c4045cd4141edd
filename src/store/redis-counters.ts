import { Redis, type Result } from 'ioredis';
import { MemoryCounters, windowEnd, windowKey, type Counters, type Slot, type Taken } from './counters.js';

declare module 'ioredis' {
  interface RedisCommander<Context> {
    tollgateTake(numberOfKeys: number, ...keysThenArgs: string[]): Result<number, Context>;
    tollgateGiveBack(numberOfKeys: number, ...keys: string[]): Result<number, Context>;
  }
}

/** Takes a place in every key (ARGV: limit, ttl per key) or in none; returns 0, or the 1-based index of a full key. */
const TAKE = `
for i, key in ipairs(KEYS) do
  if tonumber(redis.call('GET', key) or '0') >= tonumber(ARGV[2 * i - 1]) then return i end
end
for i, key in ipairs(KEYS) do
  redis.call('INCR', key)
  redis.call('PEXPIRE', key, ARGV[2 * i])
end
return 0`;

/** Gives a place back; a key whose window has ended (gone) is left alone rather than recreated at -1 without expiry. */
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
      scripts: { tollgateTake: { lua: TAKE }, tollgateGiveBack: { lua: GIVE_BACK } },
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
      const keys = slots.map((s) => PREFIX + windowKey(s.key, s.windowMs, now));
      const args = slots.flatMap((s) => [String(s.limit), String(ttl(s.windowMs, now))]);
      const full = Number(await this.answered(this.redis.tollgateTake(keys.length, ...keys, ...args)));
      if (full > 0) return { ok: false, full: full - 1 };
      // Redis gone by then: the place stays taken until its window ends (one attempt's worth, never more).
      const giveBack = () => this.answered(this.redis.tollgateGiveBack(keys.length, ...keys)).then(() => undefined, (err: Error) => this.lost(err.message));
      return { ok: true, giveBack };
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
