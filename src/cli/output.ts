import Table from 'cli-table3';

export interface OutputOptions {
  json?: boolean;
}

/**
 * `--json` prints the API's answer as is, for scripts; otherwise a readable
 * table. On a terminal the table fits its width: `priority` (most important
 * first; unlisted columns follow in display order) says which columns stay
 * when not all fit, free-text columns are cut with "…", and what was left
 * out is said on stderr. `--json` always has every field.
 */
export function printRows(rows: Record<string, unknown>[], columns: string[], opts: OutputOptions, raw: unknown = rows, priority: string[] = []): void {
  if (opts.json) {
    process.stdout.write(JSON.stringify(raw, null, 2) + '\n');
    return;
  }
  if (rows.length === 0) {
    process.stdout.write('(none)\n');
    return;
  }
  const cells = rows.map((row) => columns.map((c) => cell(row[c])));
  const layout = fitColumns(columns, cells, terminalWidth(), priority);
  const shown = layout.widths.flatMap((w, i) => (w === null ? [] : [i]));
  const table = new Table({
    head: shown.map((i) => columns[i]!),
    style: { head: [], border: [] },
    ...(layout.limited && { colWidths: shown.map((i) => layout.widths[i]! + PADDING) }),
  });
  for (const row of cells) table.push(shown.map((i) => row[i]!));
  process.stdout.write(table.toString() + '\n');
  const left = layout.widths.flatMap((w, i) => (w === null ? [columns[i]!] : []));
  if (left.length) process.stderr.write(`tollgate: left out to fit ${layout.limit} columns: ${left.join(', ')} (a wider terminal shows them; --json has every field)\n`);
}

/** One object as a two-column table (key, value); on a terminal, long values wrap within its width. */
export function printObject(obj: Record<string, unknown>, opts: OutputOptions): void {
  if (opts.json) {
    process.stdout.write(JSON.stringify(obj, null, 2) + '\n');
    return;
  }
  const entries = Object.entries(obj).map(([key, value]): [string, string] => [
    key,
    Array.isArray(value) || (value !== null && typeof value === 'object') ? JSON.stringify(value, null, 1).replace(/\n\s*/g, ' ') : cell(value),
  ]);
  const limit = terminalWidth();
  const keyWidth = Math.max(0, ...entries.map(([k]) => width(k)));
  const valueWidth = limit === null ? 0 : limit - keyWidth - 2 * PADDING - 3;
  const wrap = valueWidth >= 8 && entries.some(([, v]) => width(v) > valueWidth);
  const table = new Table({
    style: { head: [], border: [] },
    // Wrapped, not cut: a single object's values (a key, a certificate) are what the operator asked to see.
    ...(wrap && { colWidths: [keyWidth + PADDING, valueWidth + PADDING], wordWrap: true, wrapOnWordBoundary: false }),
  });
  for (const [key, value] of entries) table.push({ [key]: value });
  process.stdout.write(table.toString() + '\n');
}

/** cli-table3's padding: one space each side of a cell. */
const PADDING = 2;

/**
 * The width tables must fit: only when stdout is a terminal (a pipe or a file
 * gets whole tables). COLUMNS, when set, overrides the terminal's own size, as
 * for ls; 80 when neither says.
 */
export function terminalWidth(): number | null {
  if (!process.stdout.isTTY) return null;
  const env = Number(process.env.COLUMNS);
  if (Number.isInteger(env) && env > 0) return env;
  return process.stdout.columns > 0 ? process.stdout.columns : 80;
}

/** Free text: cut with "…" to fit (an id, a code or a time is shown whole or not at all). */
const TEXT = new Set(['name', 'note', 'details', 'value', 'reason', 'actor', 'username', 'sha256', 'mime_type']);
/** The narrowest a free-text column becomes, and the narrowest a long header is cut to. */
const MIN_TEXT = 12;
const MIN_HEADER = 10;

interface Layout {
  /** Content width per column, null for a column left out. */
  widths: (number | null)[];
  limited: boolean;
  limit: number | null;
}

/**
 * Columns of a table on `limit` characters: the most important ones that fit
 * at their narrowest (free text at MIN_TEXT, a long header cut to
 * MIN_HEADER, other values whole), then the room left given back in
 * priority order, up to each column's natural width.
 */
export function fitColumns(columns: string[], rows: string[][], limit: number | null, priority: string[] = []): Layout {
  const natural = columns.map((c, i) => Math.max(width(c), ...rows.map((r) => width(r[i]!))));
  if (limit === null || total(natural) <= limit) return { widths: natural, limited: false, limit };
  const values = columns.map((_, i) => Math.max(1, ...rows.map((r) => width(r[i]!))));
  const min = columns.map((c, i) =>
    Math.min(natural[i]!, TEXT.has(c) ? Math.max(MIN_TEXT, Math.min(width(c), MIN_HEADER)) : Math.max(values[i]!, Math.min(width(c), MIN_HEADER))),
  );
  const order = [...priority.filter((c) => columns.includes(c)), ...columns.filter((c) => !priority.includes(c))].map((c) => columns.indexOf(c));
  const kept = [...order];
  const sum = (ix: number[]) => total(ix.map((i) => min[i]!));
  while (kept.length > 1 && sum(kept) > limit) kept.pop();
  const widths: (number | null)[] = columns.map(() => null);
  for (const i of kept) widths[i] = min[i]!;
  let room = limit - total(kept.map((i) => widths[i]!));
  for (const i of kept) {
    const more = Math.max(0, Math.min(room, natural[i]! - widths[i]!));
    widths[i]! += more;
    room -= more;
  }
  // One column wider than the terminal by itself: cut it too (cli-table3 truncates to the width given).
  if (room < 0) widths[kept[0]!] = Math.max(1, widths[kept[0]!]! + room);
  return { widths, limited: true, limit };
}

/** The printed width of a table whose columns hold this much content: borders and padding around each. */
const total = (widths: number[]) => widths.reduce((a, w) => a + w + PADDING + 1, 1);

/** Characters on screen; the values shown here are ASCII or single-width symbols (… →). */
const width = (text: string) => [...text].length;

export function printDone(message: string, opts: OutputOptions, raw: unknown = { ok: true }): void {
  process.stdout.write(opts.json ? JSON.stringify(raw, null, 2) + '\n' : message + '\n');
}

function cell(value: unknown): string {
  if (value === null || value === undefined) return '-';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/**
 * Beside an answer that carries a secret the server keeps only as a digest:
 * on stdout under a table, on stderr with --json (stdout stays the JSON).
 */
export function shownOnce(line: string, opts: OutputOptions): void {
  (opts.json ? process.stderr : process.stdout).write(`${line}\n`);
}

/**
 * The details of an audit event on one line of at most `width` characters:
 * `key=value` pairs, a change as `key=before→after`. The whole object is in --json.
 */
export function summarizeDetails(details: unknown, width = 60): string {
  if (details === null || typeof details !== 'object') return cell(details);
  const line = pairs(details as Record<string, unknown>).join(' ');
  if (line === '') return '-';
  return line.length <= width ? line : `${line.slice(0, width - 1)}…`;
}

function pairs(details: Record<string, unknown>): string[] {
  const { before, after, ...rest } = details;
  const out = Object.entries(rest).map(([k, v]) => `${k}=${scalar(v)}`);
  const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
  if (isObject(before) && isObject(after)) {
    for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) out.push(`${key}=${scalar(before[key])}→${scalar(after[key])}`);
    return out;
  }
  // One side only: the action says which (a delete shows what was, a create what is).
  for (const [side, value] of [['before', before], ['after', after]] as const) {
    if (value === undefined) continue;
    if (isObject(value)) out.push(...Object.entries(value).map(([k, v]) => `${k}=${scalar(v)}`));
    else out.push(`${side}=${scalar(value)}`);
  }
  return out;
}

function scalar(value: unknown): string {
  if (value === undefined) return '-';
  if (typeof value === 'string') return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  return JSON.stringify(value);
}
