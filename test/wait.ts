import type { Server } from 'node:http';

/**
 * Waits until `cond` holds, looking again every `everyMs`; throws, naming `what`, if it does not within `ms`.
 * For a test that needs something to have happened (a row, a lock wait, a log line): a fixed sleep in its place
 * passes on a quiet machine and fails on a loaded one (CI's shared 2-core machine). The deadline is generous on
 * purpose: it is reached only when the thing never happens, and then the test fails saying what it waited for.
 * A `cond` that throws ends the wait with its error (a precondition found broken while waiting).
 */
export async function waitFor(what: string, cond: () => boolean | Promise<boolean>, ms = 10_000, everyMs = 20): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * How many of this server's connections are busy: what `closeIdleConnections` spares when the server closes. Node
 * counts a connection busy from its accept until its first request ends (its headers timeout runs from the accept),
 * then again from the first byte of each later request: on a kept-alive connection this says a new request has
 * begun, on a new one only that the server has taken it. Read from Node's own list of the server's connections, an
 * internal found by its symbol's name (no public API tells an idle connection from a busy one); throws if this
 * Node has no such list, rather than let a wait on it time out saying something else.
 */
export function requestsBegun(server: Server): number {
  const key = Object.getOwnPropertySymbols(server).find((s) => s.description === 'http.server.connections');
  const list = key && (server as unknown as Record<symbol, { active?: () => unknown[] } | undefined>)[key];
  if (typeof list?.active !== 'function') throw new Error('requestsBegun: this Node has no http.server.connections list');
  return list.active().length;
}
