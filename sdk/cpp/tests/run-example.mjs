#!/usr/bin/env node
/**
 * Runs examples/quickstart.cpp against the real server (started by harness.mjs): sets up an app as an
 * operator does (admin API, `tollgate keys init`), a variable, a file and a license code, leaves an
 * interrupted download behind, runs the example online, then again with the server unreachable, and
 * checks what it printed.   node run-example.mjs <quickstart binary>
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [binary] = process.argv.slice(2);
const { TOLLGATE_TEST_URL: url, TOLLGATE_TEST_ADMIN_TOKEN: token, TOLLGATE_TEST_NODE: node, TOLLGATE_TEST_CLI: cli, TOLLGATE_TEST_DIR: dir } = process.env;
if (!binary || !url) {
  console.error('usage (through harness.mjs): node run-example.mjs <quickstart binary>');
  process.exit(2);
}
const admin = async (method, path, body, contentType = 'application/json') => {
  const res = await fetch(`${url}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined && { 'content-type': contentType }) },
    body: body === undefined ? undefined : contentType === 'application/json' ? JSON.stringify(body) : body,
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
};

const app = await admin('POST', '/apps', { name: 'C++ quick start', offline_grace_seconds: 3600, lease_renew_seconds: 600 });
const init = JSON.parse(execFileSync(node, [cli, '--json', '--url', url, '--token', token, 'keys', 'init', '--app', app.id, '--out', join(dir, 'example-root.pem')]).toString());
await admin('PUT', `/apps/${app.id}/variables/latest_version`, { value: '2.4.1' });
const FILE = Buffer.from(Array.from({ length: 4000 }, (_, i) => `level ${i} of the game\n`).join(''));
const sha = createHash('sha256').update(FILE).digest('hex');
await admin('POST', `/apps/${app.id}/files?name=game.pak&mime_type=application/octet-stream`, FILE, 'application/octet-stream');
// A Pro license (issue 24): a template whose licenses grant the `pro` entitlement.
const template = await admin('POST', `/apps/${app.id}/templates`, { name: 'Pro', minutes: 60 * 24 * 30, entitlements: ['pro'] });
const { licenses } = await admin('POST', `/apps/${app.id}/licenses`, { count: 1, template_id: template.id });

const home = join(dir, 'example-home');
const downloads = join(dir, 'example-downloads');
mkdirSync(downloads, { recursive: true });
// An interrupted earlier download: the first bytes and the ETag they came with.
writeFileSync(join(downloads, 'game.pak.part'), FILE.subarray(0, 1000));
writeFileSync(join(downloads, 'game.pak.part.json'), JSON.stringify({ etag: `"${sha}"` }));

const env = {
  PATH: process.env.PATH,
  HOME: home,
  TOLLGATE_URL: url,
  TOLLGATE_APP_ID: app.id,
  TOLLGATE_APP_KEY: app.api_key,
  TOLLGATE_APP_SECRET: app.api_secret,
  TOLLGATE_ROOT_KEY: init.root_public_key,
  TOLLGATE_LICENSE_CODE: licenses[0].code,
  TOLLGATE_DOWNLOAD_DIR: downloads,
};
const run = (extra) => {
  const r = spawnSync(binary, [], { env: { ...env, ...extra }, encoding: 'utf8', timeout: 60_000 });
  console.log(`$ quickstart${extra.TOLLGATE_URL ? ` (TOLLGATE_URL=${extra.TOLLGATE_URL})` : ''}\n${r.stdout}${r.stderr}exit ${r.status}`);
  return r;
};
const failures = [];
const expect = (r, status, patterns) => {
  if (r.status !== status) failures.push(`exit ${r.status}, expected ${status}`);
  for (const p of patterns) if (!p.test(r.stdout)) failures.push(`no line matching ${p}`);
};

const online = run({});
expect(online, 0, [
  /^redeemed the license code$/m,
  /^logged in$/m,
  /^membership: active until \S+/m,
  /^variable latest_version = 2\.4\.1$/m,
  /^pro: PDF export enabled$/m,
  new RegExp(`^downloaded game\\.pak: ${FILE.length} bytes, sha256 ${sha}, resumed$`, 'm'),
  /^lease 1: works offline until \S+, renew after \S+$/m,
  /^offline: lease ok until \S+/m,
]);
if (!readFileSync(join(downloads, 'game.pak')).equals(FILE)) failures.push('the downloaded file differs');

const offline = run({ TOLLGATE_URL: 'http://127.0.0.1:9' });
expect(offline, 0, [/^server unreachable/m, /^offline: lease ok until \S+ \(runtime used \d+ s of 3600 s\)$/m]);

// The server's own unsigned 503 (its database down): the example falls back to its lease, no crash (issue 27.4).
await fetch(`${process.env.TOLLGATE_TEST_MITM}/__mitm`, { method: 'POST', body: JSON.stringify({ mode: 'unsigned_503', app_id: app.id }) });
const unavailable = run({ TOLLGATE_URL: process.env.TOLLGATE_TEST_MITM });
expect(unavailable, 0, [/^server unavailable \(503\)$/m, /^working offline \(Tollgate unavailable: 503 \(unverified\)\)$/m, /^offline: lease ok until \S+/m]);
await fetch(`${process.env.TOLLGATE_TEST_MITM}/__mitm`, { method: 'POST', body: JSON.stringify({ mode: 'pass' }) });

// Floating seats (issue 25): the example holds a seat while it works (its heartbeat moves the expiry on), then gives
// it back with the lease that held it.
await admin('PATCH', `/apps/${app.id}`, { max_seats: 2, heartbeat_seconds: 10 });
const seated = run({ TOLLGATE_SEATS: '1', TOLLGATE_WORK_SECONDS: '4' });
expect(seated, 0, [/^seat \S+ checked out \(1\/2 in use\), heartbeat every 3\.33+ s$/m, /^seat still held, expires at \S+$/m, /^seat released: true$/m]);
if ((await admin('GET', `/apps/${app.id}/seats`)).items.length !== 0) failures.push('the seat was not released');

if (failures.length) {
  console.error(`example: FAILED\n  ${failures.join('\n  ')}`);
  process.exit(1);
}
console.log('example: the quick start ran online and offline as expected');
