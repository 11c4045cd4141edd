import type { IncomingMessage } from 'node:http';
import type { RequestContext } from '../domain/access.js';
import type { AppContextAnswer } from '../domain/app-context.js';

/*
 * The mark the fast path (fast-path.ts) leaves on a request it hands to the Fastify route, and that
 * the route (client-plugin.ts) reads. Its own module so that those two do not import each other
 * (docs/layers.md: no file cycles).
 */

/** What the fast path found and hands to the route: the context it ran under and the outcome (a refusal, or a wait). */
export interface HandOver {
  ctx: RequestContext;
  error?: unknown;
  pending?: Promise<AppContextAnswer>;
}

export const kHandOver = Symbol('tollgate.fastPath');

export type Marked = IncomingMessage & { [kHandOver]?: HandOver };

export function handedOver(raw: IncomingMessage): HandOver | undefined {
  return (raw as Marked)[kHandOver];
}
