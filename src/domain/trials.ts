import { randomUUID } from 'node:crypto';
import type { Repositories } from '../store/index.js';
import type { TrialRecord, UserRecord } from '../store/records.js';
import { checkDevice, checkMembership, checkRequestBans, checkUserBans, type RequestContext } from './access.js';
import type { BanSet } from './bans.js';
import { DomainError, validationError } from './errors.js';
import { blocked, EMAIL_MAX, emailKey } from './trial-emails.js';
import { viewTrial } from './admin/entitlements.js';
import { events } from './events.js';
import type { Services } from './services.js';
import { hwidHash } from './signing/format.js';
import { createdUser, insertGeneratedUser, registerFirstDevice } from './signup.js';
import { run } from './steps.js';
import { digest, newToken } from './tokens.js';
import { write } from './unit-of-work.js';
import { viewUser, type UserView } from './users.js';
import { Checker, HARDWARE_ID, MAX_TIME } from './validation.js';

export interface TrialInput {
  hardware_id: string;
  email?: string | undefined;
}

export interface TrialAnswer {
  session_token: string;
  user: UserView;
}

const trialUsed = () => new DomainError('trial_used');

/**
 * POST /trial (contract, issue 24): creates or resumes the trial of this device. In order:
 * 1. shape (422); 2. the app gives no trials: 403 trials_disabled; 3. IP and hardware-id bans (403);
 * 4. this device's trial: running and its user still there → resumed (user bans, device, membership
 *    as a login checks them), else 403 trial_used; 5. the email: refused domain 422, already used 403 trial_used;
 * 6. a new trial user, in one transaction with the trial row, whose unique indexes let one of many
 *    racing requests win: the losers resume the winner's trial (or get trial_used for the email).
 */
export async function startTrial(s: Services, ctx: RequestContext, input: TrialInput): Promise<TrialAnswer> {
  try {
    return await trial(s, ctx, input);
  } catch (err) {
    if (err instanceof DomainError && err.code !== 'validation_error') events.trialRefused(s, ctx, err.code);
    throw err;
  }
}

async function trial(s: Services, ctx: RequestContext, input: TrialInput): Promise<TrialAnswer> {
  const check = new Checker();
  check.required('body.hardware_id', input.hardware_id);
  check.text('body.hardware_id', input.hardware_id, HARDWARE_ID);
  check.text('body.email', input.email, { min: 3, max: EMAIL_MAX });
  check.throwIfAny();
  const key = input.email === undefined ? null : emailKey(input.email);
  if (input.email !== undefined && key === null) throw validationError('body.email', 'must be an email address');
  const app = ctx.app;
  if (app.trialMinutes <= 0) throw new DomainError('trials_disabled');

  const bans = await run(checkRequestBans(s, ctx, input.hardware_id));
  const hash = hwidHash(app.id, input.hardware_id);
  const existing = await s.store.trials.findByHwid(app.id, hash);
  if (existing) return resume(s, ctx, bans, existing, input.hardware_id);
  // A new trial is a new account: closed registration refuses it as it refuses both sign-ups (a running one resumes).
  if (!app.registrationOpen) throw new DomainError('registration_closed');
  if (key !== null) {
    if (blocked(app.trialBlockedDomains, key.slice(key.lastIndexOf('@') + 1))) throw validationError('body.email', 'is from a domain that cannot start a trial');
    if (await s.store.trials.existsByEmail(app.id, key)) throw trialUsed();
  }

  const userId = randomUUID();
  const token = newToken('session', s.random);
  const endsAt = Math.min(ctx.now + app.trialMinutes * 60_000, MAX_TIME);
  let device: string | null = null;
  const created = await write(s, async (w) => {
    const { tx } = w;
    await insertGeneratedUser(s, tx, ctx, userId, null);
    const trialRow: TrialRecord = { id: randomUUID(), appId: app.id, hwidHash: hash, emailKey: key, userId, startedAt: ctx.now, endsAt, convertedAt: null };
    // Another request for this device (or email) committed first: undo this user, and answer from its trial.
    if (!(await tx.trials.insert(trialRow))) throw LOST_RACE;
    await tx.users.setMembership(userId, false, endsAt, ctx.now);
    for (const code of app.trialEntitlements) {
      await tx.entitlements.insert({ id: randomUUID(), appId: app.id, userId, code, source: 'trial', licenseId: null, endsAt, createdAt: ctx.now });
    }
    device = await registerFirstDevice(tx, ctx, userId, input.hardware_id);
    await tx.users.trackIp(userId, ctx.ip, ctx.now);
    await newSession(tx, ctx, userId, input.hardware_id, token);
    // Not the device's hash: a receiver has no use for it (and event data never carries a *_hash key).
    const { hwid_hash: _hash, ...trialView } = viewTrial(trialRow, ctx.now);
    return createdUser(w, ctx, userId, device, input.hardware_id, async () => { await w.emit('trial.started', app.id, trialView); });
  }).catch((err: unknown) => {
    if (err === LOST_RACE) return null;
    throw err;
  });
  if (created === null) {
    const winner = await s.store.trials.findByHwid(app.id, hash);
    if (!winner) throw trialUsed(); // the email's trial, on another device
    return resume(s, ctx, bans, winner, input.hardware_id);
  }
  events.signedUp(s, ctx, userId, 'trial');
  if (device) events.deviceAdded(s, ctx, userId, device);
  s.stats.count(app.id, 'signUps', ctx.now);
  return { session_token: token, user: created };
}

const LOST_RACE = Symbol('lost the trial race');

/** The device's trial again: only while it runs and its user exists and is not converted; a new session for the same user. */
async function resume(s: Services, ctx: RequestContext, bans: BanSet, trialRow: TrialRecord, hardwareId: string): Promise<TrialAnswer> {
  if (trialRow.userId === null || trialRow.convertedAt !== null || trialRow.endsAt <= ctx.now) throw trialUsed();
  const user: UserRecord | undefined = await s.store.users.findById(ctx.app.id, trialRow.userId);
  if (!user) throw trialUsed();
  checkUserBans(s, ctx, bans, user);
  if (ctx.app.deviceAuthEnabled) await checkDevice(s, ctx, user, hardwareId);
  checkMembership(user, ctx.now);
  const token = newToken('session', s.random);
  await write(s, async ({ tx, changed }) => {
    await newSession(tx, ctx, user.id, hardwareId, token);
    await tx.users.trackIp(user.id, ctx.ip, ctx.now);
    if (ctx.app.maxSessionsPerUser > 0) {
      await tx.sessions.trim(user.id, ctx.app.maxSessionsPerUser, ctx.now);
      changed({ user: user.id });
    }
  });
  events.trialResumed(s, ctx, user.id);
  return { session_token: token, user: viewUser(user, ctx.now) };
}

async function newSession(tx: Repositories, ctx: RequestContext, userId: string, hardwareId: string, token: string): Promise<void> {
  await tx.sessions.insert(
    { id: randomUUID(), appId: ctx.app.id, userId, hardwareId, ip: ctx.ip, createdAt: ctx.now, expiresAt: ctx.now + ctx.app.sessionTtlSeconds * 1000 },
    digest(token),
  );
}
