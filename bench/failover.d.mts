/** Types of failover.mjs for the test that runs it (test/cluster/pg-failover.test.ts). */
export interface FailoverFigures {
  skipped?: string;
  mode: string;
  requests: number;
  ok: number;
  okBeforeFailure: number;
  unavailable: number;
  other: number;
  others: unknown[];
  hung: number;
  transport: number;
  replicaLagBytesAtFailure: number;
  syncState: string;
  promoteMs: number;
  firstWriteAfterSwitchMs: number | null;
  outageMs: number | null;
  longestGapMs: number | null;
  p99GapMs: number | null;
  acknowledged: number;
  lost: number;
  lostSample: string[];
  nodesAlive: boolean;
  banReachedMs: number | null;
}
export function runFailover(options?: { synchronous?: boolean; loadMs?: number; workers?: number; log?: (line: string) => void }): Promise<FailoverFigures>;
export function formatFailover(figures: FailoverFigures): string;
