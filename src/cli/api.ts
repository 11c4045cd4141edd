import { Readable } from 'node:stream';

/** A failed call: the server's `detail` (or the transport error), for a non-zero exit. */
export class CliError extends Error {
  constructor(message: string, readonly status?: number) {
    super(message);
    this.name = 'CliError';
  }
}

export interface Connection {
  url: string;
  token: string;
}

/** The admin API over HTTP, as the CLI uses it. */
export class ApiClient {
  constructor(private readonly conn: Connection) {}

  private async call(method: string, path: string, init: RequestInit & { duplex?: 'half' } = {}): Promise<Response> {
    let res: Response;
    try {
      res = await fetch(new URL(path, this.conn.url.endsWith('/') ? this.conn.url : this.conn.url + '/'), {
        method,
        ...init,
        headers: { authorization: `Bearer ${this.conn.token}`, ...(init.headers as Record<string, string> | undefined) },
      });
    } catch (err) {
      throw new CliError(`cannot reach ${this.conn.url}: ${transportFailure(err, this.conn.url)}`);
    }
    if (!res.ok) {
      const text = await res.text();
      let detail = text;
      try {
        const body = JSON.parse(text) as { detail?: string; errors?: { field: string; message: string }[] };
        detail = body.detail ?? text;
        if (body.errors && body.errors.length > 1) detail += '\n' + body.errors.map((e) => `  ${e.field}: ${e.message}`).join('\n');
      } catch {
        // not JSON: show the text as it came
      }
      throw new CliError(`${res.status}: ${detail}`, res.status);
    }
    return res;
  }

  async json<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await this.call(method, path, body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
    // 204, and a 202 that only says "queued" (a webhook replay), have no body.
    if (res.status === 204 || res.headers.get('content-length') === '0') return undefined as T;
    return (await res.json()) as T;
  }

  async text(path: string): Promise<string> {
    return (await this.call('GET', path)).text();
  }

  /** Streams `body` as the raw request body (uploads). */
  async upload<T = unknown>(method: string, path: string, body: Readable, size: number): Promise<T> {
    const res = await this.call(method, path, {
      body: Readable.toWeb(body) as unknown as BodyInit,
      duplex: 'half',
      headers: { 'content-type': 'application/octet-stream', 'content-length': String(size) },
    });
    return (await res.json()) as T;
  }
}

/** Why fetch failed, as a sentence: its own cause is often a bare phrase ("bad port"). */
function transportFailure(err: unknown, url: string): string {
  const reason = (err as Error & { cause?: Error }).cause?.message ?? (err as Error).message;
  if (reason === 'bad port') {
    // fetch refuses ports browsers block (6000 X11, 6665-6669 IRC, 25 SMTP...) before connecting at all.
    const { port } = new URL(url);
    return `port ${port} is one that Node's HTTP client refuses to connect to (blocked for all fetch requests, as in browsers); serve Tollgate on another port (for example 8080) or behind a proxy`;
  }
  return reason;
}

export function query(params: Record<string, string | number | boolean | undefined>): string {
  const entries = Object.entries(params).filter(([, v]) => v !== undefined && v !== '') as [string, string | number | boolean][];
  return entries.length ? '?' + new URLSearchParams(entries.map(([k, v]) => [k, String(v)])).toString() : '';
}
