import { describe, expect, it } from 'vitest';
import { formatFailover, runFailover, type FailoverFigures } from '../../bench/failover.mjs';
import { pairUnavailable } from '../../bench/lib/pg-pair.mjs';

/**
 * A PostgreSQL failover under load (issue 26): a private primary and streaming replica (never the shared
 * server) behind HAProxy, two real nodes, sign-ups and license creations from 16 clients; the primary is
 * killed, the replica promoted and the proxy switched, as an orchestrator would. Bounds are generous: this
 * asserts behaviour (200 or 503 only, no hang, writes resume, the bus reconnects, nothing acknowledged lost
 * with remote_apply) and prints the timings, which docs/deploy.md and docs/performance.md quote.
 */
const why = pairUnavailable();
if (why) {
  const line = `POSTGRESQL FAILOVER TESTS SKIPPED: ${why}`;
  console.warn(`\n${'!'.repeat(line.length + 4)}\n! ${line} !\n${'!'.repeat(line.length + 4)}\n`);
}


function common(r: FailoverFigures): void {
  console.log(formatFailover(r));
  expect(r.okBeforeFailure, 'no write succeeded before the failure: the load measured nothing').toBeGreaterThan(0);
  expect(r.others, 'answers other than 200/201 or 503 service_unavailable').toEqual([]);
  expect(r.other).toBe(0);
  expect(r.hung, 'requests that hung past 30 s').toBe(0);
  expect(r.transport, 'requests without an answer (a node died?)').toBe(0);
  expect(r.nodesAlive, 'a node exited').toBe(true);
  expect(r.firstWriteAfterSwitchMs, 'no write succeeded within 90 s of the switch').not.toBeNull();
  expect(r.ok).toBeGreaterThan(r.okBeforeFailure);
  expect(r.banReachedMs, 'a ban after the failover did not reach the other node within 10 s').not.toBeNull();
}

describe.skipIf(why !== null)('PostgreSQL failover: a replica promoted under load, the proxy switched', () => {
  it('asynchronous replication: nodes answer 200 or 503 throughout, recover by themselves, and report what was lost', async () => {
    const r: FailoverFigures = await runFailover({ synchronous: false });
    expect(r.syncState).toBe('async');
    common(r);
    // Asynchronous replication may lose what the replica had not received; the figure is printed, not bounded.
    expect(r.lost).toBeLessThanOrEqual(r.acknowledged);
  }, 240_000);

  it('synchronous_commit = remote_apply: the same, and no acknowledged write is lost', async () => {
    const r: FailoverFigures = await runFailover({ synchronous: true });
    expect(r.syncState).toBe('sync');
    common(r);
    expect(r.lostSample, 'acknowledged writes missing on the new primary').toEqual([]);
    expect(r.lost).toBe(0);
  }, 240_000);
});
