import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import type { Target } from './egress.js';

/**
 * Connections are kept alive between deliveries to the same host and port (a backlog to one receiver does
 * not open a connection per delivery). A kept connection goes to an address that was checked when it was
 * opened; every new one is checked again (the pinned lookup).
 */
const httpAgent = new http.Agent({ keepAlive: true, maxSockets: 32, keepAliveMsecs: 1000, timeout: 30_000 });
const httpsAgent = new https.Agent({ keepAlive: true, maxSockets: 32, keepAliveMsecs: 1000, timeout: 30_000 });

/** What is kept of each answer. */
export const ANSWER_BYTES = 2048;

export interface Answer {
  /** null: no answer (refused, reset, timed out). */
  status: number | null;
  /** The first 2 KiB of the answer's body (as UTF-8, invalid bytes replaced). */
  body: string | null;
  error: string | null;
  /** Retry-After, in milliseconds, when the answer carried a usable one. */
  retryAfterMs: number | null;
  durationMs: number;
}

/**
 * One POST to the checked address (the `lookup` answers with it, so no second
 * DNS query can send the connection elsewhere), TLS verified against the URL's
 * host. Redirects are answers, not followed: a 3xx is a failure like any non-2xx.
 * The whole exchange, answer included, must end within `timeoutMs`.
 */
export function post(target: Target, headers: Record<string, string>, body: string, timeoutMs: number, signal?: AbortSignal, now: () => number = Date.now): Promise<Answer> {
  const started = now();
  const pinned: LookupFunction = (_host, options, callback) => {
    if ((options as { all?: boolean }).all) (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address: target.address, family: target.family }]);
    else callback(null, target.address, target.family);
  };
  const secure = target.url.protocol === 'https:';
  return new Promise((resolve) => {
    let settled = false;
    const finish = (a: Omit<Answer, 'durationMs'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      // The signal is the worker's, alive until the node stops: a listener left on it would keep this attempt.
      signal?.removeEventListener('abort', stop);
      resolve({ ...a, durationMs: Math.max(0, now() - started) });
    };
    const request = (secure ? https : http).request(target.url, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), 'user-agent': 'Tollgate-Webhooks/1' },
      lookup: pinned,
      agent: secure ? httpsAgent : httpAgent,
      ...(secure && { servername: target.url.hostname.replace(/^\[|\]$/g, '') }),
    });
    const timer = setTimeout(() => {
      request.destroy(new Error(`no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    const stop = () => request.destroy(new Error('the sending node stopped'));
    if (signal?.aborted) stop();
    signal?.addEventListener('abort', stop, { once: true });
    request.on('error', (err) => finish({ status: null, body: null, error: err.message.slice(0, 500), retryAfterMs: null }));
    request.on('response', (res) => {
      const chunks: Buffer[] = [];
      let kept = 0;
      const done = () => {
        finish({ status: res.statusCode ?? null, body: Buffer.concat(chunks).toString('utf8'), error: null, retryAfterMs: retryAfter(res.headers['retry-after'], Date.now()) });
        res.destroy();
      };
      res.on('data', (chunk: Buffer) => {
        if (kept < ANSWER_BYTES) {
          chunks.push(chunk.subarray(0, ANSWER_BYTES - kept));
          kept += Math.min(chunk.length, ANSWER_BYTES - kept);
        }
        // The rest is not needed: stop reading once 2 KiB are kept.
        if (kept >= ANSWER_BYTES) done();
      });
      res.on('end', done);
      res.on('error', done);
    });
    request.end(body);
  });
}

/** Retry-After as seconds or an HTTP date; anything else is none. */
export function retryAfter(header: string | string[] | undefined, now: number): number | null {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined) return null;
  if (/^\d{1,9}$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}
