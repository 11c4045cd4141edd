import type { Command } from 'commander';
import { query } from '../api.js';
import { int, remote, requireApp, type CliContext } from '../context.js';
import { fetchList, listOptions, tellMore } from '../lists.js';
import { printDone, printObject, printRows } from '../output.js';

type Row = Record<string, unknown> & { membership: { is_active: boolean; is_lifetime: boolean; active_until: string | null } };

const flat = (u: Row) => ({ ...u, active: u.membership.is_active, lifetime: u.membership.is_lifetime, active_until: u.membership.active_until });

function userCmd(parent: Command, name: string, description: string): Command {
  return parent.command(name).description(description).argument('<user_id>');
}

const path = (ctx: CliContext, id: string, rest = '') => `admin/v1/apps/${requireApp(ctx)}/users/${id}${rest}`;

/** `tollgate trials …` (issue 24): the app's trials, by device hash; a reset lets the device start one again. */
export function trialsCommand(program: Command): void {
  const trials = program.command('trials').description('Trials: list (by status or device), reset a device’s trial');
  listOptions(
    trials.command('list').description('List trials, oldest first')
      .option('--status <status>', 'running, ended or converted').option('--hardware-id <id>', 'the device (hashed before it is compared)'),
  ).action(
    remote(async (ctx) => {
      const filter = query({ status: ctx.opts.status as string | undefined, hardware_id: ctx.opts.hardwareId as string | undefined });
      const listed = await fetchList<Record<string, unknown>>(ctx.api, `admin/v1/apps/${requireApp(ctx)}/trials${filter}`, ctx.opts, 'trials');
      printRows(listed.items, ['id', 'status', 'user_id', 'email_key', 'started_at', 'ends_at', 'converted_at'], ctx.out, listed.items, ['id', 'status', 'user_id', 'ends_at']);
      tellMore(listed);
    }),
  );
  trials.command('reset').description('Reset a device’s trial (audited): it may start a new one').argument('<trial_id>').action(
    remote(async (ctx, id) => {
      await ctx.api.json('DELETE', `admin/v1/apps/${requireApp(ctx)}/trials/${id}`);
      printDone(`reset trial ${id}`, ctx.out);
    }),
  );
}

export function usersCommand(program: Command): void {
  const users = program.command('users').description('Users: search, inspect, extend, lifetime, password, devices, sessions, delete');

  listOptions(
    users.command('list').description('Search users (by username or id)').option('--q <text>', 'search')
      .option('--entitlement <code>', 'only users holding this entitlement now').option('--trial', 'only users on a running trial'),
  ).action(
    remote(async (ctx) => {
      const filter = query({ q: ctx.opts.q as string | undefined, entitlement: ctx.opts.entitlement as string | undefined, trial: ctx.opts.trial ? 'true' : undefined });
      const listed = await fetchList<Row>(ctx.api, `admin/v1/apps/${requireApp(ctx)}/users${filter}`, ctx.opts, 'users');
      printRows(listed.items.map(flat), ['id', 'username', 'active', 'lifetime', 'active_until', 'device_count', 'created_at'], ctx.out, listed.items, ['username', 'id', 'active', 'active_until']);
      tellMore(listed);
    }),
  );

  userCmd(users, 'get', 'Show a user with membership, devices, IPs, activations and sessions').action(
    remote(async (ctx, id) => printObject(await ctx.api.json('GET', path(ctx, id)), ctx.out)),
  );

  userCmd(users, 'extend', 'Add minutes to the membership').requiredOption('--minutes <n>', 'minutes to add', int).action(
    remote(async (ctx, id) => printObject(await ctx.api.json('PATCH', path(ctx, id), { extend_minutes: ctx.opts.minutes }), ctx.out)),
  );

  userCmd(users, 'lifetime', 'Grant (or with --revoke, revoke) lifetime access').option('--revoke', 'revoke instead of grant').action(
    remote(async (ctx, id) => printObject(await ctx.api.json('PATCH', path(ctx, id), { lifetime: !ctx.opts.revoke }), ctx.out)),
  );

  userCmd(users, 'set-password', 'Set a new password (ends every session of the user)').requiredOption('--password <password>', 'the new password').action(
    remote(async (ctx, id) => printObject(await ctx.api.json('PATCH', path(ctx, id), { password: ctx.opts.password }), ctx.out)),
  );

  userCmd(users, 'reset-devices', 'Forget the user’s devices').action(
    remote(async (ctx, id) => {
      await ctx.api.json('POST', path(ctx, id, '/reset-devices'));
      printDone(`devices reset for ${id}`, ctx.out);
    }),
  );

  userCmd(users, 'revoke-sessions', 'End every session of the user').action(
    remote(async (ctx, id) => {
      const res = await ctx.api.json<{ revoked: number }>('POST', path(ctx, id, '/revoke-sessions'));
      printDone(`revoked ${res.revoked} session(s)`, ctx.out, res);
    }),
  );

  userCmd(users, 'grant', 'Grant an entitlement to the user (for good, or until a time)')
    .requiredOption('--code <code>', 'the entitlement code, e.g. pro')
    .option('--until <iso>', 'when the grant ends')
    .action(
      remote(async (ctx, id) => {
        const body = { code: ctx.opts.code, ...(ctx.opts.until !== undefined && { until: ctx.opts.until }) };
        printObject(await ctx.api.json('POST', path(ctx, id, '/entitlements'), body), ctx.out);
      }),
    );

  userCmd(users, 'revoke-entitlement', 'End every live grant of an entitlement the user holds').argument('<code>').action(
    remote(async (ctx, id, code) => {
      const res = await ctx.api.json<{ ended: number }>('DELETE', path(ctx, id, `/entitlements/${encodeURIComponent(code!)}`));
      printDone(`ended ${res.ended} grant(s) of ${code}`, ctx.out, res);
    }),
  );

  userCmd(users, 'delete', 'Delete the user').action(
    remote(async (ctx, id) => {
      await ctx.api.json('DELETE', path(ctx, id));
      printDone(`deleted user ${id}`, ctx.out);
    }),
  );
}
