import { Writable } from 'node:stream';

/** A log line as the server wrote it (JSON), parsed. */
export type LogLine = Record<string, unknown> & { level: number; msg: string };

/** The server's log, captured as it is written: parsed lines (JSON formats), and the raw text (any format). */
export interface LogCapture {
  stream: Writable;
  lines: LogLine[];
  text(): string;
  /** The lines with this message. */
  named(msg: string): LogLine[];
}

export function captureLog(parse = true): LogCapture {
  const lines: LogLine[] = [];
  let text = '';
  let partial = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString();
      if (parse) {
        const parts = (partial + chunk.toString()).split('\n');
        partial = parts.pop()!;
        for (const line of parts) if (line.trim()) lines.push(JSON.parse(line) as LogLine);
      }
      done();
    },
  });
  return { stream, lines, text: () => text, named: (msg) => lines.filter((l) => l.msg === msg) };
}

/** A line without what every line has (time, pid, hostname), for exact comparison. */
export function fields(line: LogLine): Record<string, unknown> {
  const { time: _time, pid: _pid, hostname: _hostname, ...rest } = line;
  return rest;
}

/** Waits (bounded) until `what` holds; the caller asserts after. */
export async function until(what: () => boolean, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!what() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
}
