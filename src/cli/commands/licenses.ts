import type { Command } from 'commander';
import { licenseCsvRow, licensesCsvHeader, type LicenseView } from '../../domain/admin/licenses.js';
import { CliError, query } from '../api.js';
import { int, remote, requireApp, type CliContext } from '../context.js';
import { fetchList, listOptions, tellMore } from '../lists.js';
import { printDone, printObject, printRows } from '../output.js';

const COLUMNS = ['id', 'code', 'minutes', 'grants_lifetime_access', 'revokes_lifetime_access', 'note', 'used_at', 'used_by_user_id'];
/** What stays on a narrow terminal: the code a customer has, and whether it was used. */
const PRIORITY = ['code', 'id', 'note', 'used_at', 'used_by_user_id', 'minutes'];

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A template given by id, or by its (exact) name, looked up in the app's templates. */
export async function templateId(ctx: CliContext, given: string): Promise<string> {
  if (UUID.test(given)) return given;
  const listed = await fetchList<{ id: string; name: string }>(ctx.api, `admin/v1/apps/${requireApp(ctx)}/templates`, { all: true }, 'templates');
  const found = listed.items.find((t) => t.name === given);
  if (!found) throw new CliError(`no template named ${JSON.stringify(given)} in this app (tollgate templates list)`);
  return found.id;
}

export function licensesCommand(program: Command): void {
  const licenses = program.command('licenses').description('License codes: create in batches, list, export, delete');

  licenses
    .command('create')
    .description('Create licenses (up to 10,000 in one transaction)')
    .option('--count <n>', 'how many', int, 1)
    .option('--minutes <n>', 'minutes each adds to a membership', int)
    .option('--lifetime', 'grant lifetime access')
    .option('--revokes-lifetime', 'revoke lifetime access when activated')
    .option('--mask <mask>', 'code pattern; X = random symbol (default XXXXX-XXXXX-XXXXX-XXXXX-XXXXX)')
    .option('--note <text>', 'a note kept with each license')
    .option('--expires-at <iso>', 'unused codes stop working after this time')
    .option('--template <template>', 'make them from this template (its id or its name): its duration, entitlements, limits')
    .option('--csv', 'print the created licenses as CSV')
    .action(
      remote(async (ctx) => {
        const { opts } = ctx;
        const body: Record<string, unknown> = { count: opts.count };
        if (opts.template !== undefined) body.template_id = await templateId(ctx, opts.template as string);
        if (opts.minutes !== undefined) body.minutes = opts.minutes;
        if (opts.lifetime) body.lifetime = true;
        if (opts.revokesLifetime) body.revokes_lifetime_access = true;
        for (const [flag, field] of [['mask', 'mask'], ['note', 'note'], ['expiresAt', 'expires_at']] as const) {
          if (opts[flag] !== undefined) body[field] = opts[flag];
        }
        const res = await ctx.api.json<{ licenses: LicenseView[] }>('POST', `admin/v1/apps/${requireApp(ctx)}/licenses`, body);
        if (opts.csv) process.stdout.write(licensesCsvHeader() + res.licenses.map(licenseCsvRow).join(''));
        else printRows(res.licenses as unknown as Record<string, unknown>[], ['id', 'code', 'minutes', 'grants_lifetime_access', 'revokes_lifetime_access'], ctx.out, res, PRIORITY);
      }),
    );

  listOptions(
    licenses
      .command('list')
      .description('List licenses')
      .option('--used', 'only used licenses')
      .option('--unused', 'only unused licenses')
      .option('--q <text>', 'search code and note')
      .option('--csv', 'every matching license as CSV (streamed by the server; ignores --limit)'),
  ).action(
    remote(async (ctx) => {
      const { opts } = ctx;
      if (opts.used && opts.unused) throw new CliError('--used and --unused exclude each other');
      const filter = query({ used: opts.used ? 'true' : opts.unused ? 'false' : undefined, q: opts.q as string | undefined });
      const app = requireApp(ctx);
      if (opts.csv) {
        process.stdout.write(await ctx.api.text(`admin/v1/apps/${app}/licenses/export${filter}`));
        return;
      }
      const listed = await fetchList<Record<string, unknown>>(ctx.api, `admin/v1/apps/${app}/licenses${filter}`, opts, 'licenses');
      printRows(listed.items, COLUMNS, ctx.out, listed.items, PRIORITY);
      tellMore(listed);
    }),
  );

  licenses
    .command('get')
    .description('Show a license: who redeemed it and when')
    .argument('<license_id>')
    .action(remote(async (ctx, id) => printObject(await ctx.api.json('GET', `admin/v1/apps/${requireApp(ctx)}/licenses/${id}`), ctx.out)));

  licenses
    .command('delete')
    .description('Delete an unused license')
    .argument('<license_id>')
    .action(
      remote(async (ctx, id) => {
        await ctx.api.json('DELETE', `admin/v1/apps/${requireApp(ctx)}/licenses/${id}`);
        printDone(`deleted license ${id}`, ctx.out);
      }),
    );
}
