import type { Counters } from '../store/counters.js';
import { windowStart } from '../store/counters.js';
import type { AppRecord } from '../store/records.js';
import type { RequestContext } from './access.js';
import { DomainError } from './errors.js';
import { usernameKey } from './validation.js';

/** Which limits a request counts against. */
export type LimitedAction = 'signup' | 'license_signup' | 'login' | 'activation' | 'legacy_auth';

/** The codes that count as a failed credential attempt. */
export const FAILURE_CODES = new Set(['invalid_credentials', 'invalid_license', 'license_used']);

export class RateLimited extends DomainError {
  constructor(readonly limit: number, readonly retryAfterSeconds: number) {
    super('rate_limited', `Too many attempts; try again in ${retryAfterSeconds} s`);
  }
}

interface Rule {
  key: string;
  limit: number;
  windowMs: number;
}

/** What a request identifies itself with: a username or a license code (from body or legacy headers). */
export interface Identity {
  username?: unknown;
  code?: unknown;
}

const text = (v: unknown, max: number): string | null => (typeof v === 'string' && v.length > 0 && v.length <= max ? v : null);

/**
 * Failed credential attempts per (app, username or code) and per (app, IP),
 * and sign-ups per (app, IP) and per app, with each app's settings. Checked
 * at step 2 of every counted endpoint, before the request's shape.
 */
export class Limiter {
  constructor(private readonly counters: Counters | null) {}

  get enabled(): boolean {
    return this.counters !== null;
  }

  private failureRules(app: AppRecord, ip: string, who: Identity): Rule[] {
    const identity = { limit: app.rateFailuresPerIdentity, windowMs: app.rateFailuresPerIdentityWindowSeconds * 1000 };
    const rules: Rule[] = [{ key: `${app.id}|fail|ip|${ip}`, limit: app.rateFailuresPerIp, windowMs: app.rateFailuresPerIpWindowSeconds * 1000 }];
    const username = text(who.username, 256);
    if (username) rules.push({ key: `${app.id}|fail|user|${usernameKey(username)}`, ...identity });
    const code = text(who.code, 256);
    if (code) rules.push({ key: `${app.id}|fail|code|${code}`, ...identity });
    return rules;
  }

  private signupRules(app: AppRecord, ip: string): Rule[] {
    const rules: Rule[] = [{ key: `${app.id}|signup|ip|${ip}`, limit: app.rateSignupsPerIp, windowMs: app.rateSignupsPerIpWindowSeconds * 1000 }];
    if (app.rateSignupsPerApp > 0) rules.push({ key: `${app.id}|signup|app`, limit: app.rateSignupsPerApp, windowMs: app.rateSignupsPerAppWindowSeconds * 1000 });
    return rules;
  }

  /** Step 2: refuses with 429 if any counted key is at its limit; a sign-up also takes one from its allowance. */
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

  /** After a failed credential attempt: one more against the IP and the username or code it named. */
  async failed(ctx: RequestContext, who: Identity): Promise<void> {
    if (!this.counters) return;
    for (const rule of this.failureRules(ctx.app, ctx.ip, who)) await this.counters.increment(rule.key, rule.windowMs, ctx.now);
  }

  private refusal(rule: Rule, now: number): RateLimited {
    const reset = windowStart(now, rule.windowMs) + rule.windowMs;
    return new RateLimited(rule.limit, Math.max(1, Math.ceil((reset - now) / 1000)));
  }
}
