import { FLIGHT_SLICE_MS, windowEnd, type Counters, type Slot, type Taken } from '../store/counters.js';
import { StoreUnavailable } from '../store/db.js';
import type { AppRecord } from '../store/records.js';
import type { RequestContext } from './request-context.js';
import { DomainError } from './errors.js';
import { silentLog, type EventLog } from './events.js';
import { limitAddress } from './ip.js';
import { usernameKey } from './validation.js';

/** Which limits a request counts against. */
export type LimitedAction = 'signup' | 'license_signup' | 'login' | 'activation' | 'legacy_auth';

/** The codes that count as a failed credential attempt. */
export const FAILURE_CODES = new Set(['invalid_credentials', 'invalid_license', 'license_used']);

/** An operator's wrong password or wrong TOTP code counts; a missing code (totp_required) is no guess. */
const OPERATOR_FAILURE_CODES = new Set(['invalid_credentials', 'invalid_totp']);

/** The second-factor slot counts wrong codes only: reaching a code check takes the right password. */
const TOTP_FAILURE_CODES = new Set(['invalid_totp']);

/** Operators' sign-in failures: the defaults every app starts with (migration 0003), so the same limits as a user's login. */
export const OPERATOR_LIMITS = {
  perUsername: { limit: 10, windowMs: 900_000 },
  perIp: { limit: 30, windowMs: 300_000 },
} as const;

/**
 * The per-username ceiling across every address, as a multiple of the
 * per-(username, address) limit: a guesser on one address is stopped at the
 * limit while the owner on another keeps signing in; only one guessing from
 * this many addresses at once can lock the owner out (docs/security.md).
 */
export const USERNAME_CEILING_FACTOR = 10;

/**
 * A username's failure slots: per (username, address) at `limit`, and the
 * username across addresses at the ceiling. The address comes first in the
 * pair's key: it holds no `|`, so no username can make two pairs' keys meet.
 */
function usernameSlots(prefix: string, address: string, username: string, perPair: { limit: number; windowMs: number }): [Slot, Slot] {
  const key = usernameKey(username);
  return [
    { key: `${prefix}|pair|${address}|${key}`, ...perPair },
    { key: `${prefix}|user|${key}`, limit: perPair.limit * USERNAME_CEILING_FACTOR, windowMs: perPair.windowMs },
  ];
}

export class RateLimited extends DomainError {
  constructor(readonly limit: number, readonly retryAfterSeconds: number) {
    super('rate_limited', `Too many attempts; try again in ${retryAfterSeconds} s`);
  }
}

/** What a request identifies itself with: a username or a license code (from body or legacy headers). */
export interface Identity {
  username?: unknown;
  code?: unknown;
}

const text = (v: unknown, max: number): string | null => (typeof v === 'string' && v.length > 0 && v.length <= max ? v : null);

/**
 * Failed credential attempts per (app, username, IP) under a per-username
 * ceiling, per (app, code) and per (app, IP),
 * and sign-ups per (app, IP) and per app, with each app's settings. Read at
 * step 2 of every counted endpoint, before the request's shape; a place is
 * taken right before each credential check (`attempt`).
 */
export class Limiter {
  constructor(private readonly counters: Counters | null, private readonly log: EventLog = silentLog) {}

  get enabled(): boolean {
    return this.counters !== null;
  }

  private failureRules(app: AppRecord, ip: string, who: Identity): Slot[] {
    const identity = { limit: app.rateFailuresPerIdentity, windowMs: app.rateFailuresPerIdentityWindowSeconds * 1000 };
    const address = limitAddress(ip);
    const rules: Slot[] = [{ key: `${app.id}|fail|ip|${address}`, limit: app.rateFailuresPerIp, windowMs: app.rateFailuresPerIpWindowSeconds * 1000 }];
    const username = text(who.username, 256);
    if (username) rules.push(...usernameSlots(`${app.id}|fail`, address, username, identity));
    const code = text(who.code, 256);
    if (code) rules.push({ key: `${app.id}|fail|code|${code}`, ...identity });
    return rules;
  }

  private signupRules(app: AppRecord, ip: string): Slot[] {
    const rules: Slot[] = [{ key: `${app.id}|signup|ip|${limitAddress(ip)}`, limit: app.rateSignupsPerIp, windowMs: app.rateSignupsPerIpWindowSeconds * 1000 }];
    if (app.rateSignupsPerApp > 0) rules.push({ key: `${app.id}|signup|app`, limit: app.rateSignupsPerApp, windowMs: app.rateSignupsPerAppWindowSeconds * 1000 });
    return rules;
  }

  /** Where the counts live: 'shared' by every node, 'local' to this one (Redis away, or SQLite), 'off' (RATE_LIMIT=off). */
  status(): 'shared' | 'local' | 'off' {
    return this.counters?.status() ?? 'off';
  }

  /**
   * Step 2: refuses with 429 a key already at its limit (before the shape is
   * checked, so only reading); a sign-up also takes one from its allowance.
   */
  async check(ctx: RequestContext, action: LimitedAction, who: Identity): Promise<void> {
    if (!this.counters) return;
    if (action !== 'signup') {
      const rules = this.failureRules(ctx.app, ctx.ip, who);
      const counts = await this.counters.peek(rules.map((r) => r.key), rules.map((r) => r.windowMs), ctx.now);
      rules.forEach((rule, i) => {
        if (counts[i]! >= rule.limit) throw this.refused(rule, ctx.now);
      });
    }
    if (action === 'signup' || action === 'license_signup') {
      for (const rule of this.signupRules(ctx.app, ctx.ip)) {
        const count = await this.counters.increment(rule.key, rule.windowMs, ctx.now);
        if (count > rule.limit) throw this.refused(rule, ctx.now);
      }
    }
  }

  /**
   * Runs one credential check (a password verified, a code looked up) holding
   * a place in the failure windows of the IP and of the username or code, taken
   * before the check in one step with the comparison: N parallel guesses get
   * at most `limit` checks, where reading at step 2 and adding after the
   * check let all of them through. The place is held in flight: a wrong
   * credential moves it into the window (that is the failure counted);
   * anything else gives it back, so successes never use up the allowance. No
   * place: 429, and nothing was checked.
   */
  async attempt<T>(ctx: RequestContext, who: Identity, check: () => T | Promise<T>): Promise<T> {
    return this.hold(this.failureRules(ctx.app, ctx.ip, who), ctx.now, FAILURE_CODES, check);
  }

  /**
   * An operator's sign-in to the dashboard, held the same way as a user's
   * login: a place per IP, per (username, IP) and per username across
   * addresses taken before the password (and TOTP code) is checked, at the
   * apps' default limits (OPERATOR_LIMITS). `secondFactor`, when the attempt
   * carries a TOTP code, says whether a success proved it: such an attempt
   * may pass a full per-username ceiling (the per-address limits still hold),
   * and beyond the ceiling every other outcome is the ceiling's 429, so a
   * guesser learns nothing there, not even a right password. The code itself
   * is checked inside `attemptSecondFactor`, whose slot no address skips.
   */
  async attemptOperator<T>(ip: string, username: string, now: number, check: () => Promise<T>, secondFactor?: (result: T) => boolean): Promise<T> {
    const rules = operatorSlots(ip, username);
    if (!this.counters) return check();
    const taken = await this.counters.take(rules, now);
    if (taken.ok || !secondFactor || taken.full !== CEILING || taken.inFlightOnly) return this.settle(this.granted(rules, now, taken), OPERATOR_FAILURE_CODES, check);
    const ceiling = this.refusal(rules[CEILING]!, now);
    const beyond = await this.counters.take(rules.slice(0, CEILING), now);
    return this.settle(this.granted(rules, now, beyond), OPERATOR_FAILURE_CODES, check, { refusal: ceiling, proven: secondFactor });
  }

  /**
   * One check of an operator's TOTP code, holding a place in the operator's
   * second-factor slot (OPERATOR_LIMITS.perUsername, across every address).
   * Past the per-username ceiling a sign-in with a code is let through on its
   * address's slots alone: without this slot a holder of the password would
   * get 10 code checks per address, as many addresses as they have (review
   * finding 1). Only a wrong code counts, and a code is only checked after
   * the right password, so a stranger cannot fill it. Taken inside the
   * sign-in's check, after the password: a stranger's guesses never hold it
   * in flight either.
   */
  async attemptSecondFactor<T>(username: string, now: number, check: () => Promise<T>): Promise<T> {
    return this.hold([totpSlot(username)], now, TOTP_FAILURE_CODES, check);
  }

  /**
   * Turning TOTP off: a code checked on a session, in the sign-in's slots and
   * the second-factor slot at once (one take, so parallel guesses get exactly
   * the limit), with no way past a full ceiling: the caller has a session and
   * can wait out the window.
   */
  async attemptTotpOff<T>(ip: string, username: string, now: number, check: () => Promise<T>): Promise<T> {
    return this.hold([...operatorSlots(ip, username), totpSlot(username)], now, TOTP_FAILURE_CODES, check);
  }

  private async hold<T>(rules: Slot[], now: number, failures: ReadonlySet<string>, check: () => T | Promise<T>): Promise<T> {
    if (!this.counters) return check();
    return this.settle(this.granted(rules, now, await this.counters.take(rules, now)), failures, check);
  }

  /** The places taken, or the 429 of the slot that was full. */
  private granted(rules: Slot[], now: number, taken: Taken): Extract<Taken, { ok: true }> {
    if (!taken.ok) throw this.refused(rules[taken.full]!, now, taken.inFlightOnly);
    return taken;
  }

  /**
   * A refusal, told at debug (issue 29: what LOG_LEVEL=debug is for): which rule of which app refused, its limit
   * and when it frees up. Never the key's value: it holds the address, the username or the license code.
   */
  private refused(rule: Slot, now: number, inFlightOnly = false): RateLimited {
    const refusal = inFlightOnly ? new RateLimited(rule.limit, IN_FLIGHT_RETRY_S) : this.refusal(rule, now);
    if (this.log.enabled('debug')) {
      const [scope, action, by] = rule.key.split('|');
      this.log.debug({
        event: 'rate_limited', ...(scope === 'operator' ? { operator: true } : { appId: scope }), rule: `${action}:${by}`,
        limit: rule.limit, retryAfterSeconds: refusal.retryAfterSeconds, ...(inFlightOnly && { inFlight: true }),
      }, 'rate limit refused');
    }
    return refusal;
  }

  /**
   * Runs the check on places taken; a wrong credential keeps them, anything
   * else gives them back. `beyond` (an operator past the ceiling): every
   * answer but a success its `proven` accepts is the ceiling's refusal.
   */
  private async settle<T>(
    taken: Extract<Taken, { ok: true }>, failures: ReadonlySet<string>, check: () => T | Promise<T>,
    beyond?: { refusal: RateLimited; proven: (result: T) => boolean },
  ): Promise<T> {
    let failed = false;
    let unavailable = false;
    try {
      const result = await check();
      if (beyond && !beyond.proven(result)) throw beyond.refusal;
      return result;
    } catch (err) {
      failed = err instanceof DomainError && failures.has(err.code);
      unavailable = err instanceof StoreUnavailable;
      throw beyond && err instanceof DomainError ? beyond.refusal : err;
    } finally {
      const outcome = failed ? taken.keep : taken.giveBack;
      // An attempt the store could not serve (503) answers at once: its place goes back in the background,
      // where a failed give-back is tried again (the store is often the counters' too, and just as away).
      if (unavailable) void settleLater(outcome);
      else await outcome().catch(() => void settleLater(outcome));
    }
  }

  private refusal(rule: Slot, now: number): RateLimited {
    return new RateLimited(rule.limit, Math.max(1, Math.ceil((windowEnd(now, rule.windowMs) - now) / 1000)));
  }
}

/** An operator's sign-in slots: the address's, the (username, address) pair's and the per-username ceiling. */
function operatorSlots(ip: string, username: string): Slot[] {
  const address = limitAddress(ip);
  return [{ key: `operator|fail|ip|${address}`, ...OPERATOR_LIMITS.perIp }, ...usernameSlots('operator|fail', address, username, OPERATOR_LIMITS.perUsername)];
}

const totpSlot = (username: string): Slot => ({ key: `operator|totp|user|${usernameKey(username)}`, ...OPERATOR_LIMITS.perUsername });

/** Where the per-username ceiling sits among an operator's slots (after the IP's and the pair's). */
const CEILING = 2;

/** How often, and for how long, a give-back or keep that failed is tried again. */
const SETTLE_RETRY_MS = 500;
const SETTLE_RETRY_FOR_MS = 2 * FLIGHT_SLICE_MS;

/**
 * Tries a give-back (or keep) until the counters' store takes it. A place in
 * flight lapses with its slice anyway (within a minute): this returns it as
 * soon as the store answers again, so the attempts that were stuck on a
 * frozen database do not refuse right passwords (429) after the thaw. Past
 * the slice there is nothing left to return.
 */
async function settleLater(outcome: () => Promise<void>): Promise<void> {
  const until = performance.now() + SETTLE_RETRY_FOR_MS;
  for (;;) {
    try {
      return await outcome();
    } catch {
      if (performance.now() >= until) return;
      await new Promise((resolve) => setTimeout(resolve, SETTLE_RETRY_MS).unref());
    }
  }
}

/**
 * Retry-After of a 429 caused only by places in flight (parallel attempts
 * still being checked): they free up within a verification, not at the
 * window's end. One a lost answer left behind lapses within FLIGHT_SLICE_MS × 2.
 */
const IN_FLIGHT_RETRY_S = 1;
