import type { UserRecord } from '../store/records.js';
import type { RequestContext } from './access.js';
import { isTrialUser, liveCodes } from './entitlements.js';
import { keptWith } from './cache.js';
import { isActive, iso } from './membership.js';
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
 * serialised once per change (cached), the user once per cached user record,
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
 * A cached user record is immutable (a change replaces it), so its serialisations are kept with it: the
 * answer varies with time only through is_active, is_trial and the live entitlements, so it is kept per
 * combination of those (a handful over the record's life).
 */
const serialised = keptWith((_user: UserRecord) => new Map<string, Part>());

function userJsonOf(user: UserRecord, now: number): Part {
  const codes = user.grants.length === 0 ? '' : liveCodes(user.grants, now).join(',');
  const key = `${isActive(user, now) ? 1 : 0}${isTrialUser(user, now) ? 1 : 0}${codes}`;
  const parts = serialised(user);
  let found = parts.get(key);
  if (!found) parts.set(key, (found = part(JSON.stringify(viewUser(user, now)))));
  return found;
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
