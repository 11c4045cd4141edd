import { useEffect, useMemo, useState } from 'preact/hooks';
import { get, query } from '../api';
import { TimeChart } from '../components/Chart';
import { ErrorBox, Section, Table } from '../components/ui';
import { Link } from '../router';
import type { Stats, StatsPoint } from '../types';
import { useApps } from '../Layout';

const RANGES = { hour: { step: 3600, count: 48, label: 'Last 48 hours' }, day: { step: 86400, count: 30, label: 'Last 30 days' } } as const;

/** Every bucket of the range, zero where the server counted nothing (it may send only non-empty ones). */
function dense(stats: Stats, from: number, step: number, count: number): { times: number[]; points: StatsPoint[] } {
  const byTime = new Map(stats.series.map((p) => [Math.floor(Date.parse(p.at) / 1000 / step) * step, p]));
  const times: number[] = [];
  const points: StatsPoint[] = [];
  for (let i = 0; i < count; i++) {
    const t = from + i * step;
    times.push(t);
    points.push(byTime.get(t) ?? { at: new Date(t * 1000).toISOString(), sign_ups: 0, logins: 0, activations: 0, failed_logins: 0, trials: 0 });
  }
  return { times, points };
}

export function Overview({ appId }: { appId: string }) {
  const { apps } = useApps();
  const [bucket, setBucket] = useState<'hour' | 'day'>('hour');
  const [stats, setStats] = useState<Stats | null>(null);
  const [error, setError] = useState<unknown>(null);
  const range = RANGES[bucket];
  // Whole buckets, the current one last.
  const [from] = useMemo(() => {
    const now = Math.floor(Date.now() / 1000);
    return [Math.floor(now / range.step) * range.step - (range.count - 1) * range.step];
  }, [bucket, appId]);

  useEffect(() => {
    setStats(null);
    const to = new Date((from + range.count * range.step) * 1000).toISOString();
    get<Stats>(`/apps/${appId}/stats` + query({ bucket, from: new Date(from * 1000).toISOString(), to })).then((s) => { setStats(s); setError(null); }, setError);
  }, [appId, bucket, from]);

  const chart = useMemo(() => {
    if (!stats) return null;
    const { times, points } = dense(stats, from, range.step, range.count);
    return {
      times,
      access: [
        { label: 'Logins', color: '#1f5fbf', values: points.map((p) => p.logins) },
        { label: 'Failed logins', color: '#b3261e', values: points.map((p) => p.failed_logins) },
      ],
      growth: [
        { label: 'Sign-ups', color: '#1e7a34', values: points.map((p) => p.sign_ups) },
        { label: 'Activations', color: '#8a4fbf', values: points.map((p) => p.activations) },
        { label: 'Trials started', color: '#b36b00', values: points.map((p) => p.trials ?? 0) },
      ],
    };
  }, [stats]);

  const app = apps.find((a) => a.id === appId);
  return (
    <>
      <h1>{app ? app.name : 'Overview'}</h1>
      <ErrorBox error={error} />
      {stats && (
        <div class="tiles">
          <div class="tile"><div class="value" data-testid="active-memberships">{stats.active_memberships.toLocaleString()}</div><div class="label">active memberships</div></div>
          <div class="tile"><div class="value" data-testid="running-trials">{(stats.running_trials ?? 0).toLocaleString()}</div><div class="label">running trials</div></div>
          <div class="tile"><div class="value" data-testid="licenses-unused">{stats.licenses.unused.toLocaleString()}</div><div class="label">licenses unused</div></div>
          <div class="tile"><div class="value" data-testid="licenses-used">{stats.licenses.used.toLocaleString()}</div><div class="label">licenses used</div></div>
          <div class="tile"><div class="value">{stats.top_ban_hits.reduce((a, b) => a + b.hits, 0).toLocaleString()}</div><div class="label">refused by the top bans</div></div>
        </div>
      )}
      <Section
        title={range.label}
        actions={
          <div class="radios" role="radiogroup" aria-label="Chart period">
            <label><input type="radio" name="bucket" checked={bucket === 'hour'} onChange={() => setBucket('hour')} /> Per hour</label>
            <label><input type="radio" name="bucket" checked={bucket === 'day'} onChange={() => setBucket('day')} /> Per day</label>
          </div>
        }
      >
        {!stats && !error && <p role="status">Loading…</p>}
        {chart && (
          <div class="charts">
            <TimeChart title="Logins" times={chart.times} series={chart.access} bucket={bucket} />
            <TimeChart title="Sign-ups and activations" times={chart.times} series={chart.growth} bucket={bucket} />
          </div>
        )}
      </Section>
      {stats && (
        <Section title="Top ban hits" actions={<Link href={`/apps/${appId}/bans`}>All bans</Link>}>
          <Table caption="Bans that refused the most requests" empty={stats.top_ban_hits.length === 0}>
            <thead><tr><th scope="col">Kind</th><th scope="col">Value</th><th scope="col" class="num">Refused requests</th></tr></thead>
            <tbody>
              {stats.top_ban_hits.map((b) => (
                <tr key={b.ban_id}><td>{b.type.replace('_', ' ')}</td><td class="mono">{b.type === 'user' ? <Link href={`/apps/${appId}/users/${b.value}`}>{b.value}</Link> : b.value}</td><td class="num">{b.hits.toLocaleString()}</td></tr>
              ))}
            </tbody>
          </Table>
        </Section>
      )}
    </>
  );
}
