// The webhook rows of `npm run bench` (issue 23): what two subscribed endpoints add to an admin write,
// how many deliveries a node sends a second to a loopback receiver, and how long a commit waits for its
// first attempt. Run on SQLite and, when one answers, on PostgreSQL.
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';

const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? null : s[Math.min(s.length - 1, Math.floor(q * s.length))];
};
const median = (xs) => quantile(xs, 0.5);

/** CPU time of a process, all its threads (ns, from the scheduler's own account: finer than /proc/<pid>/stat's ticks). */
function cpuNs(pid) {
  let total = 0;
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      total += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // a thread that ended meanwhile
    }
  }
  return total;
}

/**
 * A loopback receiver: answers `status(webhook-id)` (and `retryAfter()`, a Retry-After value, when it is not
 * 200), notes when each delivery arrived.
 */
async function receiver() {
  const r = { arrivals: [], status: () => 200, retryAfter: () => null };
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const id = req.headers['webhook-id'];
      r.arrivals.push({ at: performance.now(), id, status: r.status(id) });
      const status = r.arrivals.at(-1).status;
      const retryAfter = status !== 200 ? r.retryAfter() : null;
      res.writeHead(status, retryAfter ? { 'retry-after': retryAfter } : {});
      res.end();
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  r.url = `http://127.0.0.1:${server.address().port}/hook`;
  r.close = () => new Promise((resolve) => {
    server.closeAllConnections();
    server.close(resolve);
  });
  return r;
}

async function until(check, ms, what) {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`bench webhooks: ${what} not reached within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * The rows for one store. `startTollgate(name, url, flags, env)` starts a server as the other rows do.
 * Sizes: `writes` admin writes per side of the overhead comparison, `burst` deliveries for the rate,
 * `samples` first-attempt latencies.
 */
export async function webhookRows({ startTollgate, stopChild, databaseUrl, db, say, sizes }) {
  const server = await startTollgate(`webhooks-${db}`, databaseUrl, [], { WEBHOOK_ALLOW_HOSTS: '127.0.0.1', LOG_LEVEL: 'warn' });
  const a = await receiver();
  const b = await receiver();
  try {
    const admin = server.client.admin;
    const app = await admin('POST', '/apps', { body: { name: `Webhooks bench (${db})` } });
    const write = () => admin('PATCH', `/apps/${app.id}`, { body: { max_devices_per_user: 1 + Math.floor(Math.random() * 5) } });
    const timeWrites = async (n) => {
      const times = [];
      for (let i = 0; i < n; i++) {
        const t = performance.now();
        await write();
        times.push(performance.now() - t);
      }
      return times;
    };

    // 1. An admin write (PATCH /apps/{id}: an app.updated event) with no endpoint, then with two subscribed, in
    //    alternating rounds so both sides meet the same moments of a shared machine; medians compared.
    say(`webhooks (${db}): admin write cost, ${sizes.writes} writes a side`);
    await timeWrites(50); // warm-up
    // Beside the medians, the server's CPU per write (all threads), the deliveries a side's writes caused
    // included (the side ends when the receivers have them all): less at the mercy of a shared machine.
    const none = [];
    const two = [];
    const cpu = { none: 0, two: 0 };
    const hooks = [];
    const rounds = 5;
    const perRound = Math.ceil(sizes.writes / rounds);
    const pid = server.child.pid;
    const settle = () => new Promise((resolve) => setTimeout(resolve, 100));
    for (let round = 0; round < rounds; round++) {
      for (const h of hooks.splice(0)) await admin('DELETE', `/apps/${app.id}/webhooks/${h}`, { expect: 204 });
      await settle();
      let c = cpuNs(pid);
      none.push(...(await timeWrites(perRound)));
      cpu.none += cpuNs(pid) - c;
      for (const r of [a, b]) hooks.push((await admin('POST', `/apps/${app.id}/webhooks`, { body: { url: r.url, event_types: ['app.updated'] } })).id);
      const arrived = a.arrivals.length + b.arrivals.length;
      c = cpuNs(pid);
      two.push(...(await timeWrites(perRound)));
      await until(() => a.arrivals.length + b.arrivals.length >= arrived + 2 * perRound, 60_000, 'the write-cost deliveries');
      await settle();
      cpu.two += cpuNs(pid) - c;
    }
    for (const h of hooks.splice(0)) await admin('DELETE', `/apps/${app.id}/webhooks/${h}`, { expect: 204 });
    const overhead = median(two) / median(none) - 1;

    // 2. Deliveries a second: a backlog of `burst` deliveries made due at one instant, then drained by the node's
    //    worker. Each delivery's first attempt is answered 503 with `Retry-After: <an HTTP date>`, the same instant
    //    for all, far enough ahead for every first attempt to have gone out; every later attempt is answered 200.
    //    (Answering 503 until all first attempts had arrived, with Retry-After: 2, sent the earliest deliveries'
    //    second attempts into a 503 too when the first attempts took over 2 s, and so onto the schedule's
    //    5-minute step: the drain then measured the schedule, or never ended.)
    say(`webhooks (${db}): ${sizes.burst} deliveries to a loopback receiver`);
    a.arrivals.length = 0;
    const firstSeen = new Set();
    a.status = (id) => (firstSeen.has(id) ? 200 : (firstSeen.add(id), 503));
    const dueAt = Math.ceil((Date.now() + Math.max(5_000, sizes.burst * 20)) / 1000) * 1000;
    a.retryAfter = () => new Date(dueAt).toUTCString();
    const hook = await admin('POST', `/apps/${app.id}/webhooks`, { body: { url: a.url, event_types: ['license.created'] } });
    let made = 0;
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (made < sizes.burst) {
        made++;
        await admin('POST', `/apps/${app.id}/licenses`, { body: { count: 1, minutes: 5 } });
      }
    }));
    await until(() => firstSeen.size >= sizes.burst, 120_000, 'first attempts');
    const lateFirsts = Date.now() > dueAt ? ` (the first attempts ended ${Date.now() - dueAt} ms after the backlog came due: the drain overlapped them)` : '';
    await until(() => a.arrivals.filter((x) => x.status === 200).length >= sizes.burst, 300_000, 'the drain');
    const ok = a.arrivals.filter((x) => x.status === 200);
    const perSecond = (ok.length - 1) / ((ok.at(-1).at - ok[0].at) / 1000);
    if (lateFirsts) say(`webhooks (${db}): ${lateFirsts.trim()}`);
    await admin('DELETE', `/apps/${app.id}/webhooks/${hook.id}`, { expect: 204 });

    // 3. First-attempt latency: from the write's answer to the delivery's arrival, one write at a time.
    say(`webhooks (${db}): first-attempt latency, ${sizes.samples} samples`);
    b.arrivals.length = 0;
    b.status = () => 200;
    await admin('POST', `/apps/${app.id}/webhooks`, { body: { url: b.url, event_types: ['app.updated'] } });
    const latencies = [];
    for (let i = 0; i < sizes.samples; i++) {
      const before = b.arrivals.length;
      await write();
      const answered = performance.now();
      await until(() => b.arrivals.length > before, 10_000, 'a first attempt');
      latencies.push(b.arrivals[before].at - answered);
    }
    return {
      db,
      writeMsMedianNone: median(none), writeMsMedianTwo: median(two), overhead, overheadTarget: 0.05,
      cpuUsPerWriteNone: cpu.none / 1000 / none.length, cpuUsPerWriteTwo: cpu.two / 1000 / two.length,
      deliveriesPerSecond: perSecond, deliveriesTarget: 500,
      firstAttemptMsP50: median(latencies), firstAttemptMsP95: quantile(latencies, 0.95), firstAttemptTargetMs: 1000,
    };
  } finally {
    await a.close();
    await b.close();
    await stopChild(server.child);
  }
}

export function webhookLines(rows) {
  if (rows.length === 0) return [];
  const pct = (x) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)} %`;
  const mark = (ok) => (ok ? 'ok' : 'MISSED');
  return [
    'Webhooks (issue 23): admin write (PATCH /apps/{id}) with two subscribed endpoints vs none (medians, alternating rounds); deliveries/s draining a backlog to a loopback receiver; first attempt after the write\'s answer',
    '',
    '| store | write ms, none | write ms, 2 endpoints | cost (≤ +5 %) | server CPU µs/write, none → 2 endpoints (deliveries included) | deliveries/s (≥ 500) | first attempt p50 | first attempt p95 (≤ 1000 ms) |',
    '|---|---|---|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.db} | ${r.writeMsMedianNone.toFixed(2)} | ${r.writeMsMedianTwo.toFixed(2)} | ${pct(r.overhead)} ${mark(r.overhead <= r.overheadTarget)} | ${r.cpuUsPerWriteNone.toFixed(0)} → ${r.cpuUsPerWriteTwo.toFixed(0)} | ${r.deliveriesPerSecond.toFixed(0)} ${mark(r.deliveriesPerSecond >= r.deliveriesTarget)} | ${r.firstAttemptMsP50.toFixed(1)} ms | ${r.firstAttemptMsP95.toFixed(1)} ms ${mark(r.firstAttemptMsP95 <= r.firstAttemptTargetMs)} |`),
    '',
  ];
}
