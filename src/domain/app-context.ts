import type { UserRecord } from '../store/records.js';
import type { RequestContext } from './access.js';
import { keptWith } from './cache.js';
import { iso } from './membership.js';
import type { Services } from './service-types.js';
import { wait, type Steps } from './steps.js';
import { authenticateUser, type UserCredentials } from './user-auth.js';
import { viewUser } from './users.js';

/** GET /app_context's answer, and its length in UTF-8 bytes (equal to json.length when it is all ASCII). */
export interface AppContextAnswer {
  json: string;
  bytes: number;
}

/**
 * GET /app_context, as a ready JSON string: the application part is
 * serialised once per change (cached), the user once per cached user record (and span of time),
 * and only the server time per call. The length comes from the parts' lengths,
 * kept with them, so the answer is not measured again. Synchronous while
 * everything it reads is cached (see steps.ts).
 */
export function* appContextAnswer(s: Services, ctx: RequestContext, creds: UserCredentials): Steps<AppContextAnswer> {
  const user = yield* authenticateUser(s, ctx, creds);
  let application = s.caches.applications.peek(ctx.app.id);
  if (application === undefined) application = yield* wait(s.caches.applications.get(ctx.app.id));
  const part = user ? userJsonOf(user, ctx.now) : NO_USER;
  const time = serverTime(ctx.now); // ASCII
  return {
    json: `{"application":${application.json},"user":${part.json},"server_time":"${time}"}`,
    bytes: FRAME_BYTES + application.jsonBytes + part.bytes + time.length,
  };
}

/** The bytes around the parts: `{"application":`, `,"user":`, `,"server_time":"` and `"}`. */
const FRAME_BYTES = '{"application":,"user":,"server_time":""}'.length;

interface Part {
  json: string;
  bytes: number;
}

const NO_USER: Part = { json: 'null', bytes: 4 };

/**
 * A cached user record is immutable (a change replaces it), so its serialisation is kept with it. The
 * answer varies with time only through is_active, is_trial and the live entitlements, and each of those
 * turns at one of the record's own instants (active_until, the trial's end, a grant's end): between two
 * of them the answer is the same, so it is kept with the span it holds for. A request inside the span
 * pays two comparisons, not the live codes, their sorting and a key (a handful of spans over a record's life).
 */
interface Serialised {
  /** The span [from, until) the part holds for; empty before the first request. */
  from: number;
  until: number;
  part: Part;
}

const serialised = keptWith((_user: UserRecord): Serialised => ({ from: 0, until: 0, part: NO_USER }));

export function userJsonOf(user: UserRecord, now: number): Part {
  const kept = serialised(user);
  if (now >= kept.from && now < kept.until) return kept.part;
  const [from, until] = spanOf(user, now);
  kept.part = part(JSON.stringify(viewUser(user, now)));
  kept.from = from;
  kept.until = until;
  return kept.part;
}

/**
 * The span around `now` in which nothing of the user's answer turns: from the latest of the record's
 * instants at or before `now` to the earliest after it. Every test of the answer is `instant > now`,
 * which is the same for every `now` of that span.
 */
export function spanOf(user: UserRecord, now: number): [number, number] {
  let from = -Infinity;
  let until = Infinity;
  const see = (at: number | null) => {
    if (at === null) return;
    if (at > now) until = Math.min(until, at);
    else from = Math.max(from, at);
  };
  see(user.activeUntil);
  see(user.trialEndsAt);
  for (const g of user.grants) see(g.until);
  return [from, until];
}

const part = (json: string): Part => ({ json, bytes: Buffer.byteLength(json) });

let lastMs = Number.NaN;
let lastIso = '';
let lastSecond = Number.NaN;
let secondPrefix = '';

/**
 * Under load many answers share a millisecond: format it once. A new millisecond of a second already
 * seen only appends its digits (Date's own formatting costs ~7k instructions, measured with callgrind).
 * Outside 1970-9999, or for a fractional clock, Date formats every value itself.
 */
function serverTime(now: number): string {
  if (now === lastMs) return lastIso;
  lastMs = now;
  if (!Number.isInteger(now) || now < 0 || now >= MAX_PLAIN_ISO_MS) return (lastIso = iso(now));
  const ms = now % 1000;
  const second = now - ms;
  if (second !== lastSecond) {
    lastSecond = second;
    secondPrefix = iso(second).slice(0, 20); // 'YYYY-MM-DDTHH:MM:SS.'
  }
  return (lastIso = secondPrefix + (ms < 10 ? '00' : ms < 100 ? '0' : '') + ms + 'Z');
}

/** 10000-01-01T00:00:00Z: from there on toISOString writes a six-digit signed year. */
const MAX_PLAIN_ISO_MS = 253_402_300_800_000;
