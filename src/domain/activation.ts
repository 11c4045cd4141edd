import type { LicenseRecord, UserRecord } from '../store/records.js';
import { banned, checkDevice, checkRequestBans, checkUserBans, type RequestContext } from './access.js';
import { DomainError } from './errors.js';
import { events } from './events.js';
import { findRedeemableLicense, redeem } from './licenses.js';
import { userByPassword } from './login.js';
import { iso } from './membership.js';
import type { Services } from './service-types.js';
import { run } from './steps.js';
import { requireHardwareId } from './signup.js';
import { write } from './unit-of-work.js';
import { summary } from './admin/users.js';
import { licenseData } from './outbox/data.js';
import { Checker, LICENSE_CODE, USERNAME } from './validation.js';
import { ANONYMOUS_DETAIL, authenticateUser, type UserCredentials } from './user-auth.js';
import { viewUser, type UserView } from './users.js';

export interface ActivationInput {
  code: string;
  username: string;
  password: string;
  hardware_id?: string | undefined;
}

/** The license activation record of SPEC 2.4. */
export interface ActivationView {
  id: string;
  occurred_at: string;
  minutes: number | null;
  grants_lifetime_access: boolean;
  revokes_lifetime_access: boolean;
  license_id: string;
  type: 'license';
}

/** POST /activate_license: no membership check, activating is how a membership starts. */
export async function activateLicense(s: Services, ctx: RequestContext, input: ActivationInput): Promise<ActivationView> {
  const check = new Checker();
  check.text('body.code', input.code, LICENSE_CODE);
  check.text('body.username', input.username, USERNAME);
  check.password('body.password', input.password, null);
  requireHardwareId(check, ctx.app, input.hardware_id);
  check.throwIfAny();

  const bans = await run(checkRequestBans(s, ctx, input.hardware_id));
  const { user, license } = await s.limits.attempt(ctx, { username: input.username, code: input.code }, async () => ({
    user: await userByPassword(s, ctx, input.username, input.password),
    license: await findRedeemableLicense(s, ctx, input.code),
  }));
  checkUserBans(s, ctx, bans, user, license.code);
  if (ctx.app.deviceAuthEnabled) await checkDevice(s, ctx, user, input.hardware_id!);

  return (await redeemFor(s, ctx, user, license)).activation;
}

/**
 * The redemption of /activate_license and /redeem alike, once the user and the code passed their checks:
 * the claim and its effects in one transaction (licenses.ts: trial conversion, membership, entitlements),
 * its events, and the activation record of SPEC 2.4 with the user as the transaction left them (read before
 * COMMIT, so a committed redemption is never answered as a failure).
 */
async function redeemFor(s: Services, ctx: RequestContext, user: UserRecord, license: LicenseRecord): Promise<{ activation: ActivationView; after: UserRecord | undefined }> {
  const { redeemed: activation, after } = await write(s, async ({ tx, changed, emit }) => {
    const redeemed = await redeem(tx, ctx, user.id, license);
    changed({ user: user.id }); // the membership changed
    await emit('license.redeemed', ctx.app.id, { license: licenseData(redeemed.license), user_id: user.id });
    const after = await tx.users.findById(ctx.app.id, user.id);
    if (after) await emit('user.updated', ctx.app.id, { ...summary(after, ctx.now) });
    if (redeemed.convertedTrial) await emit('trial.converted', ctx.app.id, { user_id: user.id, license_id: license.id, converted_at: iso(ctx.now) });
    return { redeemed, after };
  });
  events.licenseRedeemed(s, ctx, user.id, license.id);
  s.stats.count(ctx.app.id, 'activations', ctx.now);
  return {
    after,
    activation: {
      id: activation.id,
      occurred_at: iso(activation.occurredAt),
      minutes: activation.minutes,
      grants_lifetime_access: activation.grantsLifetime,
      revokes_lifetime_access: activation.revokesLifetime,
      license_id: activation.licenseId,
      type: 'license',
    },
  };
}

export interface RedeemInput {
  code: string;
}

/** POST /redeem's answer: the activation as /activate_license answers it, and the user after it. */
export interface RedeemAnswer {
  activation: ActivationView;
  user: UserView;
}

/**
 * POST /redeem (issue 24): the signed-in user redeems a code, a trial user (who has no password) included.
 * The code's shape first (no credential tried for a request that cannot succeed); then the access check of
 * GET /app_context without its membership step (redeeming is how an ended membership starts again, as on
 * /activate_license); then the code, counted as /activate_license counts it, and the license ban of the code
 * presented; then the redemption /activate_license makes.
 */
export async function redeemLicense(s: Services, ctx: RequestContext, creds: UserCredentials, input: RedeemInput | undefined): Promise<RedeemAnswer> {
  const check = new Checker();
  check.text('body.code', input?.code, LICENSE_CODE);
  check.throwIfAny();
  const code = input!.code;

  const user = await run(authenticateUser(s, ctx, creds, true, false));
  if (!user) throw new DomainError('anonymous_not_allowed', ANONYMOUS_DETAIL);
  const license = await s.limits.attempt(ctx, { code }, () => findRedeemableLicense(s, ctx, code));
  // The IP, device, user and sign-up license bans were checked with the credentials: the code presented is left.
  const bans = s.caches.bans.peek(ctx.app.id, ctx.now) ?? (await s.caches.bans.get(ctx.app.id));
  if (bans.license(license.code)) throw banned(s, ctx, 'license', 'This license is banned', bans, license.code, user.id);

  const { activation, after } = await redeemFor(s, ctx, user, license);
  // The claim updated this user's row in the same transaction, so it was there when the redemption committed.
  return { activation, user: viewUser(after ?? user, ctx.now) };
}
