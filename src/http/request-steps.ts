import type { IncomingMessage } from 'node:http';

/**
 * The per-request steps of the server (issue 22, item 4): the one list that
 * both ways of answering take, Fastify's routes through their hooks and GET
 * /app_context's fast path (fast-path.ts) directly. Each step's code is here
 * or named here; neither path restates it.
 *
 * Every hook a client route runs is one of these steps, by its function's
 * name (`stepHook` names it). test/request-steps.test.ts lists the hooks of
 * GET /app_context with everything on (access log, metrics, rate limits) and
 * fails on a hook that is not in this list: a new global header or hook is
 * added here, with what the fast path does for it, or the test says which.
 *
 * `fast` says how the fast path takes the step: it runs the same code, or it
 * hands the request to Fastify (untouched, before anything was done) in the
 * cases the step would answer differently from a plain 200.
 */
export const REQUEST_STEPS = {
  gate: {
    route: 'onRequest (server.ts): remembers the response (connections.ts), sets SECURITY_HEADERS, answers 503 while closing and 400 to a Host-less HTTP/1.1 request (gateRefusal)',
    fast: 'the same SECURITY_HEADERS and response tracking; a request gateRefusal refuses is handed to Fastify',
  },
  application: {
    route: 'onRequest (client-plugin.ts): the client address, the clock, the request id, the application (authenticateAppCached), the nonce (readNonce)',
    fast: 'the same functions; an app not cached, a bad or required nonce, an unknown address: handed to Fastify',
  },
  limit: {
    route: 'preValidation on counted routes while rate limits are on (client-plugin.ts): legacy credential headers counted before the user check',
    fast: 'legacy credential headers while limits are on: handed to Fastify',
  },
  errorCode: {
    route: 'onSend (access-log.ts, access log on): the code of an error answer, for its access line',
    fast: 'answers only 200s (a refusal is handed over to the route with its request context)',
  },
  sign: {
    route: 'onSend (signing.ts): an answer to a request with a nonce gets Tollgate-Signature and Tollgate-Key-Cert (signed-answer.ts)',
    fast: 'the same signedAnswerHeaders over the same bytes; a key not cached or none usable: handed to Fastify',
  },
  finished: {
    route: 'onResponse (server.ts): one FinishedRequest to every observer (access line, metrics sample)',
    fast: 'the same observers, on the answer\'s finish',
  },
} as const satisfies Record<string, { route: string; fast: string }>;

export type RequestStep = keyof typeof REQUEST_STEPS;

/** A hook function named after its step, so that the route's hooks can be listed against REQUEST_STEPS. */
export function stepHook<F extends (...args: never[]) => unknown>(step: RequestStep, hook: F): F {
  Object.defineProperty(hook, 'name', { value: step });
  return hook;
}

/** Headers every answer carries, in this order (the fast path writes them in the same order). */
export const SECURITY_HEADERS = [
  ['x-content-type-options', 'nosniff'],
  ['x-frame-options', 'DENY'],
  ['referrer-policy', 'no-referrer'],
] as const;

/** SECURITY_HEADERS as Fastify's reply.headers() takes them. */
export const SECURITY_HEADER_OBJECT: Readonly<Record<string, string>> = Object.fromEntries(SECURITY_HEADERS);

/** SECURITY_HEADERS flat, as node:http's writeHead takes them. */
export const SECURITY_HEADER_LIST: readonly string[] = SECURITY_HEADERS.flat();

/** Why the gate refuses a request before anything else is done, or null: the server closes, an HTTP/1.1 request has no Host. */
export function gateRefusal(raw: IncomingMessage, closing: boolean): 'closing' | 'no_host' | null {
  if (closing) return 'closing';
  if (raw.headers.host === undefined && raw.httpVersion === '1.1') return 'no_host';
  return null;
}

/** One answered request, as the access log and the metrics see it. */
export interface FinishedRequest {
  reqId: string;
  method: string;
  route: string;
  /** Only when no route matched (access-log.ts): the path, without the query. */
  path?: string | undefined;
  status: number;
  ms: number;
  ip: string | null;
  appId: string | undefined;
  code: string | undefined;
}

/** What is told of every answered request (step `finished`): the fields, and the unrounded time in seconds. */
export type FinishedObserver = (fields: FinishedRequest, seconds: number) => void;

/**
 * The observers of step `finished`, filled while the server is built (the
 * access log, the metrics); `any()` is read per request, so the fast path
 * takes no time for them when there are none.
 */
export class Finished {
  private readonly observers: FinishedObserver[] = [];

  add(observer: FinishedObserver | null): void {
    if (observer !== null) this.observers.push(observer);
  }

  any(): boolean {
    return this.observers.length > 0;
  }

  /** Tells every observer; bookkeeping never fails an answer that was sent, so a throw is swallowed. */
  tell(fields: FinishedRequest, seconds: number): void {
    for (const observe of this.observers) {
      try {
        observe(fields, seconds);
      } catch {
        // an observer's bug must not end the process from an event listener
      }
    }
  }
}
