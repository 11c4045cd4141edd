import { windowEnd, type Counters, type Slot } from '../store/counters.js';
import type { AppRecord } from '../store/records.js';
import type { RequestContext } from './access.js';
import { DomainError } from './errors.js';
import { usernameKey } from './validation.js';

/** Which limits a request counts against. */
export type LimitedAction = 'signup' | 'license_signup' | 'login' | 'activation' | 'legacy_auth';

/** The codes that count as a failed credential attempt. */
export const FAILURE_CODES = new Set(['invalid_credentials', 'invalid_license', 'license_used']);

/** An operator's wrong password or wrong TOTP code counts; a missing code (totp_required) is no guess. */
const OPERATOR_FAILURE_CODES = new Set(['invalid_credentials', 'invalid_totp']);

/** Operators' sign-in failures: the defaults every app starts with (migration 0003), so the same limits as a user's login. */
export const OPERATOR_LIMITS = {
  perUsername: { limit: 10, windowMs: 900_000 },
  perIp: { limit: 30, windowMs: 300_000 },
} as const;

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
 * Failed credential attempts per (app, username or code) and per (app, IP),
 * and sign-ups per (app, IP) and per app, with each app's settings. Read at
 * step 2 of every counted endpoint, before the request's shape; a place is
 * taken right before each credential check (`attempt`).
 */
export class Limiter {
  constructor(private readonly counters: Counters | null) {}

  get enabled(): boolean {
    return this.counters !== null;
  }

  private failureRules(app: AppRecord, ip: string, who: Identity): Slot[] {
    const identity = { limit: app.rateFailuresPerIdentity, windowMs: app.rateFailuresPerIdentityWindowSeconds * 1000 };
    const rules: Slot[] = [{ key: `${app.id}|fail|ip|${ip}`, limit: app.rateFailuresPerIp, windowMs: app.rateFailuresPerIpWindowSeconds * 1000 }];
    const username = text(who.username, 256);
    if (username) rules.push({ key: `${app.id}|fail|user|${usernameKey(username)}`, ...identity });
    const code = text(who.code, 256);
    if (code) rules.push({ key: `${app.id}|fail|code|${code}`, ...identity });
    return rules;
  }

  private signupRules(app: AppRecord, ip: string): Slot[] {
    const rules: Slot[] = [{ key: `${app.id}|signup|ip|${ip}`, limit: app.rateSignupsPerIp, windowMs: app.rateSignupsPerIpWindowSeconds * 1000 }];
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
        if (counts[i]! >= rule.limit) throw this.refusal(rule, ctx.now);
      });
    }
    if (action === 'signup' || action === 'license_signup') {
      for (const rule of this.signupRules(ctx.app, ctx.ip)) {
        const count = await this.counters.increment(rule.key, rule.windowMs, ctx.now);
        if (count > rule.limit) throw this.refusal(rule, ctx.now);
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
   * login: a place per IP and per username taken before the password (and
   * TOTP code) is checked, at the apps' default limits (OPERATOR_LIMITS).
   */
  async attemptOperator<T>(ip: string, username: string, now: number, check: () => Promise<T>): Promise<T> {
    const rules: Slot[] = [
      { key: `operator|fail|ip|${ip}`, ...OPERATOR_LIMITS.perIp },
      { key: `operator|fail|user|${usernameKey(username)}`, ...OPERATOR_LIMITS.perUsername },
    ];
    return this.hold(rules, now, OPERATOR_FAILURE_CODES, check);
  }

  private async hold<T>(rules: Slot[], now: number, failures: ReadonlySet<string>, check: () => T | Promise<T>): Promise<T> {
    if (!this.counters) return check();
    const taken = await this.counters.take(rules, now);
    if (!taken.ok) throw taken.inFlightOnly ? new RateLimited(rules[taken.full]!.limit, IN_FLIGHT_RETRY_S) : this.refusal(rules[taken.full]!, now);
    let failed = false;
    try {
      return await check();
    } catch (err) {
      failed = err instanceof DomainError && failures.has(err.code);
      throw err;
    } finally {
      // The counters' store may fail here too (the check's 503 is often the same outage): the place then
      // lapses with its slice, within a minute, instead of being kept or given back.
      await (failed ? taken.keep() : taken.giveBack()).catch(() => undefined);
    }
  }

  private refusal(rule: Slot, now: number): RateLimited {
    return new RateLimited(rule.limit, Math.max(1, Math.ceil((windowEnd(now, rule.windowMs) - now) / 1000)));
  }
}

/**
 * Retry-After of a 429 caused only by places in flight (parallel attempts
 * still being checked): they free up within a verification, not at the
 * window's end. One a lost answer left behind lapses within FLIGHT_SLICE_MS × 2.
 */
const IN_FLIGHT_RETRY_S = 1;
