import Table from 'cli-table3';

export interface OutputOptions {
  json?: boolean;
}

/** `--json` prints the API's answer as is, for scripts; otherwise a readable table. */
export function printRows(rows: Record<string, unknown>[], columns: string[], opts: OutputOptions, raw: unknown = rows): void {
  if (opts.json) {
    process.stdout.write(JSON.stringify(raw, null, 2) + '\n');
    return;
  }
  if (rows.length === 0) {
    process.stdout.write('(none)\n');
    return;
  }
  const table = new Table({ head: columns, style: { head: [], border: [] } });
  for (const row of rows) table.push(columns.map((c) => cell(row[c])));
  process.stdout.write(table.toString() + '\n');
}

/** One object as a two-column table (key, value). */
export function printObject(obj: Record<string, unknown>, opts: OutputOptions): void {
  if (opts.json) {
    process.stdout.write(JSON.stringify(obj, null, 2) + '\n');
    return;
  }
  const table = new Table({ style: { head: [], border: [] } });
  for (const [key, value] of Object.entries(obj)) {
    if (Array.isArray(value) || (value !== null && typeof value === 'object')) table.push({ [key]: JSON.stringify(value, null, 1).replace(/\n\s*/g, ' ') });
    else table.push({ [key]: cell(value) });
  }
  process.stdout.write(table.toString() + '\n');
}

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
