#!/usr/bin/env node
// Summarises a V8 .cpuprofile (node --cpu-prof) by function:
//   - self time: the function was on top of the stack;
//   - total time: the function was anywhere on the stack (counted once per sample);
//   - self time by area: Tollgate (dist/), each node_modules package, node: internals, V8/native.
// Usage: node bench/profile-summary.mjs <file.cpuprofile> [--top 25] [--json] [--from µs --to µs]
// --from/--to keep only the samples in that window of the monotonic clock (the
// profile's own clock; the harness passes the measured run's window).
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

/** `file:///x/node_modules/fastify/lib/reply.js` → `fastify/lib/reply.js`; dist/… stays dist/… */
function shortUrl(url) {
  if (!url) return '';
  // The harness runs a private copy of dist/ (bench/.dist-<pid>/): report it as dist/.
  const u = url.replace(/^file:\/\//, '').replace(/\/bench\/\.dist-\d+\//, '/dist/');
  const nm = u.lastIndexOf('/node_modules/');
  if (nm >= 0) return u.slice(nm + '/node_modules/'.length);
  const dist = u.lastIndexOf('/dist/');
  if (dist >= 0) return u.slice(dist + 1);
  return u;
}

function areaOf(url, functionName) {
  if (!url) {
    if (functionName === '(idle)') return '(idle)';
    if (functionName === '(garbage collector)') return '(garbage collector)';
    if (functionName === '(program)') return '(program: V8/native, outside JS)';
    return '(native)';
  }
  if (url.startsWith('node:')) return 'node: internals';
  const s = shortUrl(url);
  if (s.startsWith('dist/')) return 'tollgate (dist/)';
  if (url.includes('/node_modules/')) {
    const parts = s.split('/');
    return parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
  }
  return s;
}

export function summarise(profile, top = 25, window = null) {
  const { nodes, samples, timeDeltas } = profile;
  const byId = new Map();
  const parent = new Map();
  for (const n of nodes) byId.set(n.id, n);
  for (const n of nodes) for (const c of n.children ?? []) parent.set(c, n.id);

  const keyOf = (n) => {
    const cf = n.callFrame;
    const name = cf.functionName || '(anonymous)';
    return cf.url ? `${name}  ${shortUrl(cf.url)}:${cf.lineNumber + 1}` : name;
  };

  // Sample i lasts from its timestamp to the next one (DevTools' convention); the last runs to endTime.
  const durations = new Array(samples.length);
  let t = profile.startTime;
  const stamps = timeDeltas.map((d) => (t += d));
  for (let i = 0; i < samples.length; i++) {
    durations[i] = ((i + 1 < samples.length ? stamps[i + 1] : profile.endTime) - stamps[i]) / 1000; // ms
    if (!(durations[i] >= 0)) durations[i] = 0;
  }

  const self = new Map();
  const total = new Map();
  const areas = new Map();
  let all = 0;
  let idle = 0;
  for (let i = 0; i < samples.length; i++) {
    if (window && (stamps[i] < window[0] || stamps[i] > window[1])) continue;
    const ms = durations[i];
    const leaf = byId.get(samples[i]);
    if (!leaf) continue;
    all += ms;
    const k = keyOf(leaf);
    if (leaf.callFrame.functionName === '(idle)') idle += ms;
    self.set(k, (self.get(k) ?? 0) + ms);
    const area = areaOf(leaf.callFrame.url, leaf.callFrame.functionName);
    areas.set(area, (areas.get(area) ?? 0) + ms);
    const seen = new Set();
    for (let id = samples[i]; id !== undefined; id = parent.get(id)) {
      const key = keyOf(byId.get(id));
      if (seen.has(key)) continue;
      seen.add(key);
      total.set(key, (total.get(key) ?? 0) + ms);
    }
  }
  const busy = all - idle;
  const rows = (m, filter = () => true) =>
    [...m.entries()]
      .filter(([k]) => k !== '(idle)' && k !== '(root)' && filter(k))
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, ms]) => ({ name, ms: Math.round(ms), pctBusy: busy > 0 ? (100 * ms) / busy : 0 }));
  return {
    wallMs: Math.round(all),
    idleMs: Math.round(idle),
    busyMs: Math.round(busy),
    selfTop: rows(self),
    areas: rows(areas),
    tollgateTotal: rows(total, (k) => k.includes(' dist/')),
  };
}

export function formatSummary(s) {
  const line = (r) => `${r.pctBusy.toFixed(1).padStart(5)}%  ${String(r.ms).padStart(7)} ms  ${r.name}`;
  return [
    `profiled ${s.wallMs} ms: busy ${s.busyMs} ms, idle ${s.idleMs} ms (percentages are of busy time)${s.requests ? `; ${s.requests} requests: ${(1000 * s.busyMs / s.requests).toFixed(1)} µs of CPU (main thread) per request` : ''}`,
    '',
    'Self time by area:',
    ...s.areas.map(line),
    '',
    'Top functions by self time:',
    ...s.selfTop.map(line),
    '',
    'Tollgate functions by total time (self + callees):',
    ...s.tollgateTotal.map(line),
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { top: { type: 'string' }, json: { type: 'boolean' }, from: { type: 'string' }, to: { type: 'string' } },
  });
  if (positionals.length !== 1) {
    process.stderr.write('usage: node bench/profile-summary.mjs <file.cpuprofile> [--top 25] [--json]\n');
    process.exit(2);
  }
  const window = values.from || values.to ? [Number(values.from ?? 0), Number(values.to ?? Infinity)] : null;
  const summary = summarise(JSON.parse(readFileSync(positionals[0], 'utf8')), Number(values.top ?? 25), window);
  process.stdout.write((values.json ? JSON.stringify(summary, null, 2) : formatSummary(summary)) + '\n');
}
