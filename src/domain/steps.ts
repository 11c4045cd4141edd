/**
 * Work that nearly always finishes at once (everything it reads is cached) but
 * sometimes has to wait for a load, a query or a password hash.
 *
 * Written as a generator that yields each promise it waits for — `yield*
 * wait(p)` where an async function would write `await p` — it reads like one
 * async function, and `run` keeps it synchronous until the first real wait.
 * Measured on GET /app_context (Bearer, every lookup a cache hit): the same
 * checks as a chain of async functions cost about a quarter of the route's
 * throughput in promises and microtasks.
 *
 * A cached value is read as `cache.peek(key)`, and only on a miss
 * `yield* wait(cache.get(key))`, written out where it is read: a helper
 * generator would cost a generator object and a delegation per lookup, four
 * to six lookups per hot request. Freshness is judged by the clock at the
 * lookup, not by the request's start (a slow body must not stretch how long a
 * cached value may be served).
 */
export type Steps<T> = Generator<Promise<unknown>, T, unknown>;

/** Waits for a promise inside steps. */
export function* wait<T>(promise: Promise<T>): Steps<T> {
  return (yield promise) as T;
}

/**
 * Runs steps to the end: their value if they never had to wait, else a
 * promise of it. What they throw before their first wait is thrown here;
 * after it, the promise rejects. `await run(…)` works in async code either way.
 */
export function run<T>(steps: Steps<T>): T | Promise<T> {
  return advance(steps, steps.next());
}

function advance<T>(steps: Steps<T>, step: IteratorResult<Promise<unknown>, T>): T | Promise<T> {
  if (step.done) return step.value;
  return step.value.then(
    (value) => advance(steps, steps.next(value)),
    (err: unknown) => advance(steps, steps.throw(err)),
  );
}
