import pino from 'pino';

/** Where the server's log lines go, and how to let the last of them out at the end. */
export interface LogOutput {
  stream: NodeJS.WritableStream;
  /** Writes out whatever is still buffered (at close, and before the process exits). */
  flush(): void;
}

/** At most this long between a line being logged and it reaching stdout (a buffered line waits for company). */
const FLUSH_MS = 500;

/**
 * stdout, JSON or pretty (LOG_FORMAT). JSON lines are buffered up to 4 KiB
 * (an access line is ~250 bytes) and written asynchronously: one write per
 * ~16 lines under load rather than one per line, and a stalled reader of
 * stdout (a busy journald) never blocks the event loop, as a synchronous
 * write would. maxWrite 8 KiB: sonic-boom measures its pending chunk on every
 * write, so a smaller chunk costs less per line (measured: 2.5-3.5 µs a line
 * with pino's defaults, 1.6-2.5 with these; docs in decisions-L15). A quiet
 * server flushes what it holds every FLUSH_MS (sonic-boom's unref'd timer),
 * and pino writes the buffer out synchronously when the process exits, a
 * crash included (only SIGKILL loses it). Pretty is for a person at a
 * terminal: each line written as it comes.
 */
export function stdoutLog(format: 'json' | 'pretty'): LogOutput {
  if (format === 'pretty') return { stream: prettyStream(process.stdout), flush: () => undefined };
  const destination = pino.destination({ dest: 1, minLength: 4096, maxWrite: 8192, periodicFlush: FLUSH_MS, sync: false });
  return {
    stream: destination as unknown as NodeJS.WritableStream,
    flush: () => {
      try {
        destination.flushSync();
      } catch {
        // a write already in flight (EAGAIN on a full pipe): sonic-boom writes the rest when it completes
      }
    },
  };
}

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
/** Fields every line has, shown in the line's head or not at all. */
const HEAD = new Set(['level', 'time', 'msg', 'pid', 'hostname']);

/** A stream that takes pino's JSON lines (one per write) and writes them to `out` as text for people. */
export function prettyStream(out: NodeJS.WritableStream): NodeJS.WritableStream {
  return { write: (line: string) => out.write(prettyLine(line)) } as unknown as NodeJS.WritableStream;
}

/**
 * `2026-11-23T17:05:12.345Z INFO  request method=GET route=/app_context status=200 …`:
 * the time, the level, the message, then every other field as key=value in
 * the order logged (a value with spaces or quotes in JSON quotes). An error's
 * stack follows on indented lines.
 */
export function prettyLine(line: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line.endsWith('\n') ? line : `${line}\n`;
  }
  const time = typeof entry.time === 'number' ? new Date(entry.time).toISOString() : '';
  const level = (LEVELS[entry.level as number] ?? String(entry.level)).padEnd(5);
  let text = `${time} ${level} ${typeof entry.msg === 'string' ? entry.msg : ''}`;
  let stack = '';
  for (const [key, value] of Object.entries(entry)) {
    if (HEAD.has(key) || value === undefined) continue;
    if (key === 'err' && value && typeof value === 'object') {
      const err = value as { message?: unknown; stack?: unknown };
      text += ` err=${shown(err.message)}`;
      if (typeof err.stack === 'string') stack = err.stack.replace(/^/gm, '    ');
      continue;
    }
    text += ` ${key}=${shown(value)}`;
  }
  return `${text}\n${stack ? `${stack}\n` : ''}`;
}

function shown(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"=]*$/.test(value) && value !== '' ? value : JSON.stringify(value);
  return typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value);
}
