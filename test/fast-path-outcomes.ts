/**
 * What GET /app_context's fast path did with each request, for test/fast-path.test.ts and
 * test/fast-path-attacks.test.ts. Each mocks src/http/fast-path.js with `recording` (behaviour unchanged), so a
 * case meant for the fast path cannot silently be answered by Fastify. Types only from the real module: this file
 * is loaded inside the mock's factory.
 */
import type * as FastPath from '../src/http/fast-path.js';
import { handedOver } from '../src/http/hand-over.js';

/** Answered it; handed a refusal or a cache miss to the route; passed it to Fastify untouched; threw. */
export type Outcome = 'answered' | 'refused' | 'pending' | 'passed' | 'threw';

/** The module with fastAppContext wrapped to push each request's outcome onto `outcomes` (a throw is pushed, then rethrown). */
export function recording(real: typeof FastPath, outcomes: string[]): typeof FastPath {
  return {
    ...real,
    fastAppContext: (o) => {
      const fast = real.fastAppContext(o);
      return (req, res) => {
        let answered: boolean;
        try {
          answered = fast(req, res);
        } catch (err) {
          outcomes.push('threw');
          throw err;
        }
        const handed = answered ? undefined : handedOver(req);
        outcomes.push(answered ? 'answered' : handed === undefined ? 'passed' : handed.pending !== undefined ? 'pending' : 'refused');
        return answered;
      };
    },
  };
}

/** What the fast path did with the requests of `during` (each one that reached the fast-path server). */
export async function outcomesDuring(outcomes: string[], during: () => Promise<unknown>): Promise<Outcome[]> {
  const before = outcomes.length;
  await during();
  return outcomes.slice(before) as Outcome[];
}
