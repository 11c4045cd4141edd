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
