/**
 * Shared by test/fast-path.test.ts and test/fast-path-attacks.test.ts: requests as raw bytes, and two servers over
 * the same services, the harness's (GET /app_context's fast path on) and one built as src/wiring.ts builds it with
 * the fast path off, both listening on 127.0.0.1.
 */
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterEach } from 'vitest';
import { loadConfig } from '../src/config/index.js';
import { buildServer } from '../src/http/server.js';
import { serverSettings } from '../src/wiring.js';
import { ADMIN_TOKEN, harness, noticesHeard, type Harness, type TestApp } from './helpers.js';
import type { LogCapture } from './log-capture.js';

export type HeaderValue = string | Buffer;

/** A request as bytes: the request line, then the headers exactly in this order (Buffers are sent as they are), then any body. */
export function request(headers: [string, HeaderValue][], opts: { method?: string; target?: string; host?: boolean; version?: string; body?: Buffer | string } = {}): Buffer {
  const parts: Buffer[] = [Buffer.from(`${opts.method ?? 'GET'} ${opts.target ?? '/app_context'} ${opts.version ?? 'HTTP/1.1'}\r\n`, 'latin1')];
  if (opts.host !== false) parts.push(Buffer.from('Host: tollgate.test\r\n', 'latin1'));
  for (const [name, value] of headers) parts.push(Buffer.from(`${name}: `, 'latin1'), typeof value === 'string' ? Buffer.from(value, 'latin1') : value, Buffer.from('\r\n'));
  parts.push(Buffer.from('\r\n'));
  if (opts.body !== undefined) parts.push(typeof opts.body === 'string' ? Buffer.from(opts.body, 'latin1') : opts.body);
  return Buffer.concat(parts);
}

export const appHeaders = (app: TestApp): [string, string][] => [['X-Api-Key', app.apiKey], ['X-Api-Secret', app.apiSecret]];
export const bearer = (token: string): [string, string] => ['Authorization', `Bearer ${token}`];

export interface Pair {
  h: Harness;
  fast: number;
  slow: number;
  other: FastifyInstance;
  close(): Promise<void>;
}

export async function pair(env: Record<string, string> = {}, logs?: { fast: LogCapture; slow: LogCapture }): Promise<Pair> {
  const h = await harness({ env, ...(logs && { logStream: logs.fast.stream }) });
  // On PostgreSQL a node hears its own change notices back, later than the write: one heard after a test warmed a
  // cache would empty it again and turn an expected fast-path answer into a hand-over. So every write these tests
  // make through the harness returns once its notices were heard.
  const { admin, client } = h;
  const heard = async (res: LightMyRequestResponse) => {
    await noticesHeard(h);
    return res;
  };
  h.admin = async (...args) => heard(await admin(...args));
  h.client = async (...args) => heard(await client(...args));
  const config = loadConfig({ DATABASE_URL: 'sqlite:./unused.db', TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN, LOG_LEVEL: 'silent', RATE_LIMIT: 'off', ...env });
  const other = await buildServer({
    services: h.tollgate.services,
    ...serverSettings(config),
    ...(logs && { logStream: logs.slow.stream }),
    reuseCompiledSchemas: true,
    fastPath: false,
    logger: config.logLevel === 'silent' ? false : { level: config.logLevel },
  });
  await other.ready();
  const fast = Number(new URL(await h.tollgate.server.listen({ port: 0, host: '127.0.0.1' })).port);
  const slow = Number(new URL(await other.listen({ port: 0, host: '127.0.0.1' })).port);
  return {
    h, fast, slow, other,
    async close() {
      await other.close();
      await h.close();
    },
  };
}

/**
 * For a describe block whose tests each open their own pair: `pairs.open(...)` is `pair(...)`, and every pair a test
 * opened is closed after it.
 */
export function pairEach(): { open: typeof pair } {
  const opened: Pair[] = [];
  afterEach(async () => {
    for (const p of opened.splice(0)) await p.close();
  });
  return {
    async open(...args) {
      const p = await pair(...args);
      opened.push(p);
      return p;
    },
  };
}
