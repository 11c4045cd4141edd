import { Presets, SingleBar } from 'cli-progress';
import type { Command } from 'commander';
import type { ApiClient } from './api.js';
import { positiveInt } from './context.js';

/** The server's largest page (`?limit=` 1–500). */
const PAGE = 500;

/** `--limit`, `--cursor` and `--all` on a list command. */
export function listOptions(cmd: Command, defaultLimit = 100): Command {
  return cmd
    .option('--limit <n>', 'at most this many rows', positiveInt, defaultLimit)
    .option('--cursor <cursor>', 'continue where an earlier list stopped (it prints the cursor)')
    .option('--all', 'every matching row, page after page (a progress bar on stderr when it is a terminal)');
}

export interface Listed<T> {
  items: T[];
  /** What was left out, for stderr ("100 of 2,431 shown; …"); null when the list is complete. */
  more: string | null;
}

interface Page<T> {
  items: T[];
  next_cursor: string | null;
  /** Answered when asked for (`?with_total=true`) by servers that count. */
  total?: number;
}

const count = (n: number) => n.toLocaleString('en-US');

/**
 * One list as the operator asked for it: the first `--limit` rows from
 * `--cursor` (or the start), or with `--all` every row. A list cut short
 * says so, with how to get the rest: a table of exactly 100 rows that exits
 * 0 looks complete.
 */
export async function fetchList<T>(api: ApiClient, path: string, opts: Record<string, unknown>, noun = 'rows'): Promise<Listed<T>> {
  const all = opts.all === true;
  const limit = all ? Infinity : (opts.limit as number);
  const items: T[] = [];
  let cursor = (opts.cursor as string | undefined) ?? null;
  let total: number | undefined;
  let first = true;
  let bar: SingleBar | null = null;
  try {
    do {
      const size = Math.min(PAGE, limit - items.length);
      const params = new URLSearchParams({ limit: String(size) });
      if (cursor) params.set('cursor', cursor);
      if (first) params.set('with_total', 'true');
      first = false;
      const page = await api.json<Page<T>>('GET', `${path}${path.includes('?') ? '&' : '?'}${params}`);
      if (typeof page.total === 'number') total ??= page.total;
      items.push(...page.items);
      cursor = page.next_cursor;
      if (all && cursor && !bar && process.stderr.isTTY) bar = progressBar(total, noun);
      bar?.update(items.length);
    } while (cursor && items.length < limit);
  } finally {
    bar?.stop();
  }
  if (!cursor) return { items, more: null };
  const shown = total === undefined ? `${count(items.length)} shown; more exist` : `${count(items.length)} of ${count(total)} shown`;
  return { items, more: `${shown}; --all to fetch all, or --cursor ${cursor} for the next ${count(limit)}` };
}

/** On stderr, so stdout stays the table or the JSON a script reads. */
export function tellMore(listed: Listed<unknown>): void {
  if (listed.more) process.stderr.write(`tollgate: ${listed.more}\n`);
}

function progressBar(total: number | undefined, noun: string): SingleBar {
  const format = total === undefined ? ` {value} ${noun} fetched` : ` {bar} {percentage}% | {value}/{total} ${noun}`;
  const bar = new SingleBar({ format, stream: process.stderr, hideCursor: true }, Presets.shades_classic);
  bar.start(total ?? 0, 0);
  return bar;
}
