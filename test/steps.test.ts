import { describe, expect, it } from 'vitest';
import { InvalidatingCache } from '../src/domain/cache.js';
import { run, wait, type Steps } from '../src/domain/steps.js';

/**
 * The access checks run as steps (src/domain/steps.ts): synchronous while
 * everything is cached, a promise once they wait. Both ways must give the
 * same answers and the same errors, in the same order.
 */
describe('steps', () => {
  function* sum(a: number, b: Promise<number> | number): Steps<number> {
    const second = typeof b === 'number' ? b : yield* wait(b);
    return a + second;
  }

  it('answer at once (no promise) when nothing waits', () => {
    expect(run(sum(1, 2))).toBe(3);
  });

  it('answer with a promise once something waits, and go on after it', async () => {
    const out = run(sum(1, Promise.resolve(2)));
    expect(out).toBeInstanceOf(Promise);
    expect(await out).toBe(3);
  });

  it('throw at once what is thrown before the first wait', () => {
    function* failing(): Steps<number> {
      throw new Error('early');
    }
    expect(() => run(failing())).toThrow('early');
  });

  it('reject with what is thrown after a wait', async () => {
    function* failingLater(): Steps<number> {
      yield* wait(Promise.resolve(0));
      throw new Error('late');
    }
    await expect(run(failingLater())).rejects.toThrow('late');
  });

  it('deliver a rejected wait into the steps, where it can be caught', async () => {
    function* recovering(): Steps<string> {
      try {
        yield* wait(Promise.reject(new Error('load failed')));
        return 'not reached';
      } catch (err) {
        return `caught ${(err as Error).message}`;
      }
    }
    expect(await run(recovering())).toBe('caught load failed');
  });

  it('run nested steps in order, waiting where each one waits', async () => {
    const seen: string[] = [];
    function* step(name: string, value: Promise<number> | number): Steps<number> {
      seen.push(`start ${name}`);
      const v = typeof value === 'number' ? value : yield* wait(value);
      seen.push(`end ${name}`);
      return v;
    }
    function* all(): Steps<number> {
      return (yield* step('a', 1)) + (yield* step('b', Promise.resolve(2))) + (yield* step('c', 3));
    }
    expect(await run(all())).toBe(6);
    expect(seen).toEqual(['start a', 'end a', 'start b', 'end b', 'start c', 'end c']);
  });

  it('read a cache at once on a hit and load (then keep) on a miss', async () => {
    // As the hot paths read their caches (steps.ts).
    function* cached<T>(cache: InvalidatingCache<T>, key: string): Steps<T> {
      const hit = cache.peek(key);
      return hit !== undefined ? hit : yield* wait(cache.get(key));
    }
    let loads = 0;
    const cache = new InvalidatingCache<string>(async (key) => {
      loads++;
      return { value: `value of ${key}`, validUntil: Infinity };
    }, () => 1_000);
    const miss = run(cached(cache, 'k'));
    expect(miss).toBeInstanceOf(Promise);
    expect(await miss).toBe('value of k');
    expect(run(cached(cache, 'k'))).toBe('value of k');
    expect(loads).toBe(1);
  });
});
