import type { ActivityCounts } from '../../store/repositories/stats.js';
import { validationError } from '../errors.js';
import { iso } from '../membership.js';
import type { Services } from '../service-types.js';
import { addCounts, HOUR_MS, zeroCounts } from '../stats.js';
import { getApp } from './apps.js';

export type Bucket = 'hour' | 'day';

const BUCKET_MS: Record<Bucket, number> = { hour: HOUR_MS, day: 24 * HOUR_MS };
/** The default window, and the longest one a request may ask for (a chart's worth of points). */
const DEFAULT_BUCKETS: Record<Bucket, number> = { hour: 24, day: 30 };
const MAX_BUCKETS: Record<Bucket, number> = { hour: 24 * 31, day: 366 };
const TOP_BANS = 10;

export interface StatsQuery {
  bucket: Bucket;
  /** Epoch ms; rounded down to the bucket (UTC). */
  from?: number;
  /** Epoch ms, exclusive; rounded up to the bucket. */
  to?: number;
}

export interface StatsView {
  bucket: Bucket;
  from: string;
  to: string;
  series: { at: string; sign_ups: number; logins: number; activations: number; failed_logins: number; trials: number }[];
  active_memberships: number;
  /** Users on a running trial now (issue 24). */
  running_trials: number;
  licenses: { used: number; unused: number };
  top_ban_hits: { ban_id: string; type: string; value: string; hits: number }[];
}

const floorTo = (ms: number, step: number) => Math.floor(ms / step) * step;

/**
 * The overview of one app: activity per hour or UTC day in [from, to), every bucket present (zero
 * when nothing happened), plus the counts of now. Activity is what the nodes have flushed: up to
 * FLUSH_INTERVAL_MS (stats.ts) behind.
 */
export async function appStats(s: Services, appId: string, q: StatsQuery): Promise<StatsView> {
  await getApp(s, appId);
  const step = BUCKET_MS[q.bucket];
  const now = s.clock();
  const to = q.to !== undefined ? Math.ceil(q.to / step) * step : floorTo(now, step) + step;
  const from = q.from !== undefined ? floorTo(q.from, step) : to - DEFAULT_BUCKETS[q.bucket] * step;
  if (from >= to) throw validationError('querystring.from', 'must be before to');
  if ((to - from) / step > MAX_BUCKETS[q.bucket]) {
    throw validationError('querystring.from', `spans more than ${MAX_BUCKETS[q.bucket]} ${q.bucket}s; ask for a shorter range or bucket=day`);
  }

  const [rows, activeMemberships, used, unused, bans, trials, runningTrials] = await Promise.all([
    s.store.stats.activity(appId, from, to),
    s.store.stats.activeMemberships(appId, now),
    s.store.licenses.count(appId, { used: true }),
    s.store.licenses.count(appId, { used: false }),
    s.store.stats.topBanHits(appId, from, to, TOP_BANS),
    s.store.trials.startedPerBucket(appId, from, to, step),
    s.store.trials.count(appId, { status: 'running' }, now),
  ]);
  const buckets = new Map<number, ActivityCounts>();
  for (let at = from; at < to; at += step) buckets.set(at, zeroCounts());
  for (const r of rows) addCounts(buckets.get(floorTo(r.hour, step))!, r);
  return {
    bucket: q.bucket,
    from: iso(from),
    to: iso(to),
    series: [...buckets].map(([at, c]) => ({
      at: iso(at), sign_ups: c.signUps, logins: c.logins, activations: c.activations, failed_logins: c.failedLogins, trials: trials.get(at) ?? 0,
    })),
    active_memberships: activeMemberships,
    running_trials: runningTrials,
    licenses: { used, unused },
    top_ban_hits: bans.map((b) => ({ ban_id: b.banId, type: b.type, value: b.value, hits: b.hits })),
  };
}
