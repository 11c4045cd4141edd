import { createHook } from 'node:async_hooks';

/**
 * Keeps process.nextTick on V8's fast path for the life of the process.
 *
 * Node's nextTick builds each tick as `{ [async_id_symbol], [trigger_async_id_symbol], callback, args }`.
 * V8 records the hidden classes ("maps") of that object in nextTick's feedback, weakly. When a full GC
 * runs while no tick is queued (an idle server: the end of start-up, the memory reducer between bursts),
 * those maps die, the feedback is left pointing at nothing, and it never learns again: every nextTick
 * from then on defines its four properties through the runtime, ~250 ns instead of ~30 ns (Node 20,
 * V8 11.3; measured in docs/performance.md, "the unsigned hot path against the seed, by syscalls").
 * node:http queues ~10 ticks per answer, so a server that lost them paid ~3 µs more per request
 * (GET /app_context: 13 → 17 µs of user CPU). It happened to the merged tree after every start
 * (its larger start-up ends with a full GC on an idle process) and to any build after idle full GCs.
 *
 * One real tick object, held for good, keeps its map and (through each map's back pointer) the
 * whole chain alive, so the feedback stays valid. The tick is caught by an async hook enabled for
 * one synchronous nextTick call; it is caught again every few minutes, since the maps change once
 * in a process's life (the async id counter outgrows small integers after ~10^9 async operations).
 *
 * Its price: enabling an init hook, even for one call, installs V8's promise hooks, and V8 keeps its
 * promise fast paths off for the rest of the process (a microbenchmark of await/then loops on Node 20:
 * 200 → 236-261 ns an iteration of three promises, ~13 ns a promise). The fast path's answers use no
 * promise; a route that awaits ~100 promises pays ~1.3 µs beside its milliseconds of database or argon2.
 */
let kept: object | null = null;
let timer: NodeJS.Timeout | null = null;

/** Catches one tick object now (null if none was seen). */
function catchTick(): object | null {
  let caught: object | null = null;
  const hook = createHook({
    init(_id, type, _trigger, resource) {
      if (type === 'TickObject' && caught === null) caught = resource as object;
    },
  });
  hook.enable();
  try {
    process.nextTick(noop);
  } finally {
    hook.disable();
  }
  return caught;
}

/** Holds a tick object from now on (idempotent); `refreshMs` re-catches it on an unref'd timer. */
export function keepTickShape(refreshMs = 5 * 60_000): void {
  kept = catchTick() ?? kept;
  if (timer !== null || refreshMs <= 0) return;
  timer = setInterval(() => {
    kept = catchTick() ?? kept;
  }, refreshMs);
  timer.unref();
}

function noop(): void {}
