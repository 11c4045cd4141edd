import type { Command } from 'commander';
import { query } from '../api.js';
import { positiveInt, remote, requireApp } from '../context.js';
import { printDone, printRows } from '../output.js';

interface SeatList {
  items: Record<string, unknown>[];
  total: number;
}

const COLUMNS = ['id', 'user_id', 'hardware_id', 'checked_out_at', 'last_heartbeat_at', 'expires_at'];
const PRIORITY = ['id', 'user_id', 'expires_at'];

/** Floating seats (issue 25): the live ones of an app or a user, and releasing one. */
export function seatsCommand(program: Command): void {
  const seats = program.command('seats').description('Floating seats: list the live ones (of the app or one user), release one');

  seats.command('list').description('Live seats, soonest to end first')
    .option('--user <user_id>', 'only this user’s seats')
    .option('--limit <n>', 'at most this many (app-wide; default 100, at most 1000)', positiveInt)
    .action(
      remote(async (ctx) => {
        const app = requireApp(ctx);
        const user = ctx.opts.user as string | undefined;
        const url = user !== undefined ? `admin/v1/apps/${app}/users/${user}/seats` : `admin/v1/apps/${app}/seats${query({ limit: ctx.opts.limit as number | undefined })}`;
        const listed = await ctx.api.json<SeatList>('GET', url);
        printRows(listed.items, COLUMNS, ctx.out, listed, PRIORITY);
        if (listed.total > listed.items.length) process.stderr.write(`tollgate: ${listed.items.length} of ${listed.total} live seats shown (--limit)\n`);
      }),
    );

  seats.command('release').description('Release a live seat (its device’s next heartbeat is refused: the seat is lost)').argument('<seat_id>').action(
    remote(async (ctx, id) => {
      await ctx.api.json('DELETE', `admin/v1/apps/${requireApp(ctx)}/seats/${id}`);
      printDone(`released seat ${id}`, ctx.out);
    }),
  );
}
