import type { Command } from 'commander';
import { CliError } from '../api.js';
import { int, remote, requireApp, type CliContext } from '../context.js';
import { fetchList, listOptions, tellMore } from '../lists.js';
import { printDone, printObject, printRows } from '../output.js';

const COLUMNS = ['id', 'name', 'minutes', 'lifetime', 'entitlements', 'max_devices', 'redeem_within_minutes', 'max_seats', 'heartbeat_seconds'];

/** `--max-devices none` clears a limit (sent as null); a number sets it. Commander turns a parser's null into '', so the word is kept until the body is made. */
const NONE = 'none';
const intOrNone = (value: string): number | typeof NONE => (value === NONE ? NONE : int(value));
const list = (value: string): string[] => value.split(',').map((s) => s.trim()).filter((s) => s !== '');

const path = (ctx: CliContext, rest = '') => `admin/v1/apps/${requireApp(ctx)}/templates${rest}`;

/** The body of a create or change from the flags given (none of them: nothing). */
function templateBody(opts: Record<string, unknown>): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (opts.name !== undefined) body.name = opts.name;
  if (opts.minutes !== undefined) body.minutes = opts.minutes;
  if (opts.lifetime) body.lifetime = true;
  if (opts.entitlements !== undefined) body.entitlements = opts.entitlements;
  for (const [flag, field] of [['maxDevices', 'max_devices'], ['redeemWithin', 'redeem_within_minutes'], ['maxSeats', 'max_seats'], ['heartbeat', 'heartbeat_seconds']] as const) {
    if (opts[flag] !== undefined) body[field] = opts[flag] === NONE ? null : opts[flag];
  }
  return body;
}

function templateOptions(cmd: Command): Command {
  return cmd
    .option('--minutes <n>', 'minutes each license adds', int)
    .option('--lifetime', 'licenses grant lifetime access')
    .option('--entitlements <codes>', 'comma-separated entitlement codes granted on redemption (e.g. pro,export-pdf)', list)
    .option('--max-devices <n|none>', 'device limit for users holding it', intOrNone)
    .option('--redeem-within <minutes|none>', 'unredeemed codes expire this long after creation', intOrNone)
    .option('--max-seats <n|none>', 'concurrent seats for users holding it', intOrNone)
    .option('--heartbeat <seconds|none>', 'seat heartbeat interval', intOrNone);
}

/** `tollgate templates …` (issue 24): license templates, created once, licenses made from them. */
export function templatesCommand(program: Command): void {
  const templates = program.command('templates').description('License templates: duration, entitlements and limits set once, licenses made from them');

  listOptions(templates.command('list').description('List the app’s templates')).action(
    remote(async (ctx) => {
      const listed = await fetchList<Record<string, unknown>>(ctx.api, path(ctx), ctx.opts, 'templates');
      printRows(listed.items.map((t) => ({ ...t, entitlements: (t.entitlements as string[]).join(',') })), COLUMNS, ctx.out, listed.items, ['name', 'id', 'minutes', 'entitlements']);
      tellMore(listed);
    }),
  );

  templateOptions(templates.command('create').description('Create a template').requiredOption('--name <name>', 'unique per app')).action(
    remote(async (ctx) => printObject(await ctx.api.json('POST', path(ctx), templateBody(ctx.opts)), ctx.out)),
  );

  templates.command('get').description('Show a template').argument('<template_id>').action(
    remote(async (ctx, id) => printObject(await ctx.api.json('GET', path(ctx, `/${id}`)), ctx.out)),
  );

  templateOptions(templates.command('update').description('Change a template (future licenses only; see apply)').argument('<template_id>').option('--name <name>', 'a new name')).action(
    remote(async (ctx, id) => {
      const body = templateBody(ctx.opts);
      if (Object.keys(body).length === 0) throw new CliError('nothing to change: give at least one option');
      printObject(await ctx.api.json('PATCH', path(ctx, `/${id}`), body), ctx.out);
    }),
  );

  templates.command('apply').description('Copy the template’s current effects onto the licenses made from it (audited)').argument('<template_id>').action(
    remote(async (ctx, id) => {
      const res = await ctx.api.json<{ unused_licenses: number; used_licenses: number; users: number }>('POST', path(ctx, `/${id}/apply`));
      printDone(`applied to ${res.unused_licenses} unused and ${res.used_licenses} used license(s), ${res.users} user(s)`, ctx.out, res);
    }),
  );

  templates.command('delete').description('Delete a template (its licenses keep what they copied)').argument('<template_id>').action(
    remote(async (ctx, id) => {
      await ctx.api.json('DELETE', path(ctx, `/${id}`));
      printDone(`deleted template ${id}`, ctx.out);
    }),
  );
}
