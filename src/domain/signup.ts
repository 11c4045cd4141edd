import { randomUUID } from 'node:crypto';
import { UniqueViolation } from '../store/db.js';
import type { Repositories } from '../store/index.js';
import type { AppRecord } from '../store/records.js';
import { banned, checkRequestBans, type RequestContext } from './access.js';
import { DomainError } from './errors.js';
import { events } from './events.js';
import { applyClaimed, claim, findRedeemableLicense } from './licenses.js';
import type { Services } from './service-types.js';
import { run } from './steps.js';
import { write, type Work } from './unit-of-work.js';
import { summary } from './admin/users.js';
import { licenseData } from './outbox/data.js';
import { viewUser, type UserView } from './users.js';
import { Checker, HARDWARE_ID, LICENSE_CODE, USERNAME, usernameKey } from './validation.js';

export interface SignUpInput {
  username: string;
  password: string;
  hardware_id?: string | undefined;
}

/** POST /sign_up, checks in the order of DECISIONS.md. */
export async function signUp(s: Services, ctx: RequestContext, input: SignUpInput): Promise<UserView> {
  const check = new Checker();
  check.text('body.username', input.username, USERNAME);
  check.password('body.password', input.password, ctx.app.passwordMinLength);
  requireHardwareId(check, ctx.app, input.hardware_id);
  check.throwIfAny();

  await run(checkRequestBans(s, ctx, input.hardware_id));
  if (!ctx.app.registrationOpen) throw new DomainError('registration_closed');

  const key = usernameKey(input.username);
  if (await s.store.users.existsByUsernameKey(ctx.app.id, key)) throw usernameTaken();
  const passwordHash = await s.hasher.hash(input.password);

  const id = randomUUID();
  let device: string | null = null;
  let user: UserView;
  try {
    user = await write(s, async (w) => {
      const { tx } = w;
      await tx.users.insert({ id, appId: ctx.app.id, username: input.username, usernameKey: key, passwordHash, signupLicenseId: null, createdAt: ctx.now });
      device = await registerFirstDevice(tx, ctx, id, input.hardware_id);
      await tx.users.trackIp(id, ctx.ip, ctx.now);
      return createdUser(w, ctx, id, device, input.hardware_id);
    });
  } catch (err) {
    if (err instanceof UniqueViolation) throw usernameTaken(); // lost a race for the name
    throw err;
  }
  signedUp(s, ctx, id, 'password', device);
  return user;
}

/** The event lines of a committed sign-up. */
function signedUp(s: Services, ctx: RequestContext, userId: string, via: 'password' | 'license', device: string | null): void {
  events.signedUp(s, ctx, userId, via);
  s.stats.count(ctx.app.id, 'signUps', ctx.now);
  if (device) events.deviceAdded(s, ctx, userId, device);
}

const usernameTaken = () => new DomainError('username_taken', undefined, [{ field: 'body.username', message: 'is already taken' }]);

export interface LicenseSignUpInput {
  code: string;
  hardware_id?: string | undefined;
}

/** POST /sign_up_with_license_code: a generated username, the license redeemed in the same transaction. */
export async function signUpWithLicense(s: Services, ctx: RequestContext, input: LicenseSignUpInput): Promise<UserView> {
  const check = new Checker();
  check.text('body.code', input.code, LICENSE_CODE);
  requireHardwareId(check, ctx.app, input.hardware_id);
  check.throwIfAny();

  const bans = await run(checkRequestBans(s, ctx, input.hardware_id));
  if (!ctx.app.registrationOpen) throw new DomainError('registration_closed');
  const license = await s.limits.attempt(ctx, { code: input.code }, () => findRedeemableLicense(s, ctx, input.code));
  if (bans.license(license.code)) throw banned(s, ctx, 'license', 'This license is banned', bans, license.code);

  const userId = randomUUID();
  let device: string | null = null;
  const user = await write(s, async (w) => {
    const { tx } = w;
    // Claim first: of many racing sign-ups with one code, all but one stop here, before creating anything.
    await claim(tx, ctx, userId, license);
    await insertGeneratedUser(s, tx, ctx, userId, license.id);
    const { license: used } = await applyClaimed(tx, ctx, userId, license);
    device = await registerFirstDevice(tx, ctx, userId, input.hardware_id);
    await tx.users.trackIp(userId, ctx.ip, ctx.now);
    const view = await createdUser(w, ctx, userId, device, input.hardware_id);
    await w.emit('license.redeemed', ctx.app.id, { license: licenseData(used), user_id: userId });
    return view;
  });
  signedUp(s, ctx, userId, 'license', device);
  events.licenseRedeemed(s, ctx, userId, license.id);
  s.stats.count(ctx.app.id, 'activations', ctx.now);
  return user;
}

/**
 * The answer of a sign-up (each of the three: password, license code, trial), read before COMMIT: once
 * committed, nothing may turn the sign-up into an error. Its events (the user; then those of how it came,
 * `alongside`, as a trial's trial.started; then the first device if one was registered) are written here,
 * in the same transaction.
 */
export async function createdUser(
  w: Work,
  ctx: RequestContext,
  id: string,
  device: string | null,
  hardwareId: string | undefined,
  alongside?: () => Promise<void>,
): Promise<UserView> {
  const user = await w.tx.users.findById(ctx.app.id, id);
  if (!user) throw new Error('user vanished during sign-up');
  await w.emit('user.created', ctx.app.id, { ...summary(user, ctx.now) });
  await alongside?.();
  if (device !== null) await w.emit('device.registered', ctx.app.id, { user_id: id, device_id: device, hardware_id: hardwareId ?? null });
  return viewUser(user, ctx.now);
}

export function requireHardwareId(check: Checker, app: AppRecord, hardwareId: string | undefined): void {
  if (hardwareId === undefined) {
    if (app.deviceAuthEnabled) check.add('body.hardware_id', 'is required when device authentication is enabled');
  } else {
    check.text('body.hardware_id', hardwareId, HARDWARE_ID);
  }
}

/** A new user has no devices, so with device authentication on the first one always fits. Returns its id, if one was added. */
export async function registerFirstDevice(tx: Repositories, ctx: RequestContext, userId: string, hardwareId: string | undefined): Promise<string | null> {
  if (!ctx.app.deviceAuthEnabled || hardwareId === undefined) return null;
  const id = randomUUID();
  await tx.devices.insert({ id, appId: ctx.app.id, userId, hardwareId, createdAt: ctx.now, lastSeenAt: ctx.now });
  await tx.users.takeDeviceSlot(userId, ctx.app.maxDevicesPerUser);
  return id;
}

const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';

/** `user_` + 12 random base32 characters (60 bits); never derived from the code. */
export function generatedUsername(random: (n: number) => Buffer): string {
  const bytes = random(12);
  let name = 'user_';
  for (let i = 0; i < 12; i++) name += BASE32[bytes[i]! & 31];
  return name;
}

/** A user without a password under a generated name: a license-code sign-up's (`signupLicenseId`), or a trial's (null). */
export async function insertGeneratedUser(s: Pick<Services, 'random'>, tx: Repositories, ctx: RequestContext, id: string, signupLicenseId: string | null): Promise<void> {
  const username = generatedUsername(s.random);
  // A collision at 60 bits is all but impossible; if it happens the unique index refuses it and the request fails cleanly.
  await tx.users.insert({ id, appId: ctx.app.id, username, usernameKey: usernameKey(username), passwordHash: null, signupLicenseId, createdAt: ctx.now });
}
