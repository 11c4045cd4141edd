import type { Command } from 'commander';
import { query } from '../api.js';
import { remote, requireApp } from '../context.js';
import { fetchList, listOptions, tellMore } from '../lists.js';
import { createTokenLocally } from '../local.js';
import { printDone, printObject, printRows, shownOnce, summarizeDetails } from '../output.js';

export function bansCommand(program: Command): void {
  const bans = program.command('bans').description('Bans: IP addresses and ranges, hardware IDs, license codes, users');
  listOptions(
    bans
      .command('list')
      .description('List bans')
      .option('--type <type>', 'ip, hardware_id, license or user'),
  ).action(
    remote(async (ctx) => {
      const listed = await fetchList<Record<string, unknown>>(ctx.api, `admin/v1/apps/${requireApp(ctx)}/bans${query({ type: ctx.opts.type as string | undefined })}`, ctx.opts, 'bans');
      printRows(listed.items, ['id', 'type', 'value', 'reason', 'expires_at', 'created_at'], ctx.out, listed.items, ['type', 'value', 'id', 'expires_at', 'reason']);
      tellMore(listed);
    }),
  );
  bans
    .command('create')
    .description('Ban something')
    .requiredOption('--type <type>', 'ip, hardware_id, license or user')
    .requiredOption('--value <value>', 'an IP or CIDR range, a hardware ID, a license code or a user id')
    .option('--reason <text>', 'why')
    .option('--expires-at <iso>', 'lift the ban automatically at this time')
    .action(
      remote(async (ctx) => {
        const body: Record<string, unknown> = { type: ctx.opts.type, value: ctx.opts.value };
        if (ctx.opts.reason !== undefined) body.reason = ctx.opts.reason;
        if (ctx.opts.expiresAt !== undefined) body.expires_at = ctx.opts.expiresAt;
        printObject(await ctx.api.json('POST', `admin/v1/apps/${requireApp(ctx)}/bans`, body), ctx.out);
      }),
    );
  bans
    .command('delete')
    .description('Lift a ban')
    .argument('<ban_id>')
    .action(
      remote(async (ctx, id) => {
        await ctx.api.json('DELETE', `admin/v1/apps/${requireApp(ctx)}/bans/${id}`);
        printDone(`lifted ban ${id}`, ctx.out);
      }),
    );
}

export function tokensCommand(program: Command): void {
  const tokens = program.command('tokens').description('Admin tokens');
  listOptions(tokens.command('list').description('List admin tokens')).action(
    remote(async ({ api, out, opts }) => {
      const listed = await fetchList<Record<string, unknown>>(api, 'admin/v1/tokens', opts, 'tokens');
      printRows(listed.items, ['id', 'name', 'role', 'operator_username', 'created_at', 'last_used_at', 'revoked_at'], out, listed.items, ['name', 'id', 'role', 'revoked_at', 'operator_username', 'last_used_at']);
      tellMore(listed);
    }),
  );
  const createRemotely = remote(async ({ api, out, opts }, name) => {
    // Without --role the server gives the creator's own role; it refuses a role above the creator's.
    const body: Record<string, unknown> = { name };
    if (opts.role !== undefined) body.role = opts.role;
    printObject(await api.json('POST', 'admin/v1/tokens', body), out);
    shownOnce('The admin token is shown only once: it is stored as a digest and cannot be printed again.', out);
  });
  tokens
    .command('create')
    .description('Create a named admin token (shown once); --local writes it into the database directly, when no token is left')
    .argument('<name>')
    .option('--role <role>', 'owner, admin, support or viewer (default: your own role; never above it)')
    .option('--local', 'no server, no admin token: create it in the database (DATABASE_URL, on this machine; role owner)')
    .option('--database-url <url>', 'the database for --local (implies it) [env DATABASE_URL]')
    .action(async function (this: Command, name: string, options: { local?: boolean; databaseUrl?: string; role?: string }) {
      if (options.local || options.databaseUrl !== undefined) {
        if (options.role !== undefined && options.role !== 'owner') {
          process.stderr.write('tollgate: a --local token is an owner token (the way back in); create other roles through the server\n');
          process.exitCode = 1;
          return;
        }
        return createTokenLocally(name, options.databaseUrl, this.optsWithGlobals<{ json?: boolean }>().json === true);
      }
      return createRemotely.call(this, name);
    });
  tokens.command('revoke').description('Revoke an admin token').argument('<token_id>').action(
    remote(async ({ api, out }, id) => {
      await api.json('DELETE', `admin/v1/tokens/${id}`);
      printDone(`revoked token ${id}`, out);
    }),
  );
}

export function auditCommand(program: Command): void {
  const audit = program
    .command('audit')
    .description('Read the audit log of admin writes (newest first)')
    .option('--target <id>', 'only this object')
    .option('--action <action>', 'only this action, e.g. ban.create')
    .option('--since <iso>', 'from this time')
    .option('--until <iso>', 'before this time');
  listOptions(audit, 50).action(
    remote(async (ctx) => {
      const o = ctx.opts as Record<string, string | undefined>;
      const q = query({ app_id: o.app, target_id: o.target, action: o.action, since: o.since, until: o.until });
      const listed = await fetchList<Record<string, unknown>>(ctx.api, `admin/v1/audit${q}`, ctx.opts, 'events');
      // The table shows a one-line summary of each event's details; --json has them whole.
      const rows = listed.items.map((e) => ({ ...e, details: summarizeDetails(e.details) }));
      // On a narrow terminal: when, what and its summary first, then who; the ids are in --json.
      printRows(rows, ['at', 'actor', 'action', 'app_id', 'target_id', 'details'], ctx.out, listed.items, ['at', 'action', 'details', 'actor', 'target_id']);
      tellMore(listed);
    }),
  );
}
