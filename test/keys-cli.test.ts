import { createPrivateKey, createPublicKey } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeCertificate } from '../src/domain/signing/format.js';
import { ok, run, tempDir, type Run } from './cli-process.js';
import { admin, ADMIN_TOKEN, call, startNode, stopNode, type Node } from './cluster/nodes.js';
import { STORE } from './helpers.js';
import { rootPair } from './signing-fixtures.js';

/**
 * `tollgate keys` as an operator runs it: the built CLI against a real server
 * process on a SQLite file. The root key is made on the operator's side, its
 * private half written 0600 and never sent: the test scans the server's
 * database files for it. SQLite only: the server is a separate process.
 */
describe.skipIf(STORE !== 'sqlite')('tollgate keys against a real server', () => {
  let node: Node;
  let dir: string;
  let work: string;
  let app: { id: string; headers: Record<string, string> };

  const keys = (args: string[], cwd = work) => run(['--url', node.url, '--token', ADMIN_TOKEN, 'keys', ...args], cwd);
  /** One line on stderr starting "tollgate: ", nothing on stdout, no stack. */
  const failed = (r: Run, what: string, message: RegExp) => {
    expect(r.code, `${what} should fail\n${r.stdout}${r.stderr}`).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^tollgate: [^\n]*\n$/);
    expect(r.stderr).toMatch(message);
  };
  const newApp = async (name: string) => {
    const res = await admin(node.url, 'POST', '/apps', { name });
    expect(res.status).toBe(201);
    return { id: res.body.id as string, headers: { 'x-api-key': res.body.api_key as string, 'x-api-secret': res.body.api_secret as string } };
  };
  const listed = async (id = app.id) => (await admin(node.url, 'GET', `/apps/${id}/signing-keys`)).body.items as { kid: string; status: string }[];
  const publicOf = (pemFile: string) => createPublicKey(createPrivateKey(readFileSync(pemFile))).export({ format: 'jwk' }).x!;

  beforeAll(async () => {
    dir = tempDir();
    work = tempDir();
    node = await startNode(`sqlite:${join(dir, 'tollgate.db')}`, { LOG_LEVEL: 'trace' });
    app = await newApp('Keys CLI');
  }, 60_000);
  afterAll(async () => {
    if (node) await stopNode(node);
  });

  let rootFile: string;
  let firstKid: string;

  it('init: a 0600 root file in the working directory, only the public root uploaded, a first key active for --days', async () => {
    const r = ok(await keys(['init', '--app', app.id, '--days', '30']), 'keys init');
    rootFile = join(work, `tollgate-root-${app.id}.pem`);
    expect(statSync(rootFile).mode & 0o777).toBe(0o600);
    const pinned = (await admin(node.url, 'GET', `/apps/${app.id}/root-key`)).body.public_key as string;
    expect(pinned).toBe(publicOf(rootFile));
    expect(r.stdout).toContain(pinned);
    expect(r.stdout).toContain(rootFile);
    expect(r.stdout).toMatch(/keep it offline/i);
    const items = await listed();
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({ status: 'active' });
    firstKid = items[0]!.kid;
    const key = (await admin(node.url, 'GET', `/apps/${app.id}/signing-keys/${firstKid}`)).body;
    expect(Date.parse(key.not_after) - Date.parse(key.not_before)).toBe(30 * 24 * 3600 * 1000);
    expect(r.stdout).toContain(firstKid);
  });

  it('init refuses to overwrite an existing file, before asking the server anything', async () => {
    const before = readFileSync(rootFile, 'utf8');
    failed(await keys(['init', '--app', app.id]), 'init over the default file', /already exists: refusing to overwrite/);
    expect(readFileSync(rootFile, 'utf8')).toBe(before);
    const other = join(work, 'precious.txt');
    writeFileSync(other, 'do not touch');
    const fresh = await newApp('Fresh');
    failed(await keys(['init', '--app', fresh.id, '--out', other]), 'init over any file', /already exists/);
    expect(readFileSync(other, 'utf8')).toBe('do not touch');
    expect((await admin(node.url, 'GET', `/apps/${fresh.id}/root-key`)).status).toBe(404);
  });

  it('init on an app that already has a root: the server refuses and no stray key file is left', async () => {
    const out = join(work, 'second-root.pem');
    failed(await keys(['init', '--app', app.id, '--out', out]), 'second init', /409: .*already has a root key/);
    expect(existsSync(out)).toBe(false);
  });

  it('bad arguments: one-line errors', async () => {
    const r = await keys(['init', '--app', app.id, '--days', '91', '--out', join(work, 'x.pem')]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/at most 90/);
    expect(existsSync(join(work, 'x.pem'))).toBe(false);
    failed(await run(['--url', node.url, '--token', ADMIN_TOKEN, 'keys', 'list'], work, { TOLLGATE_APP: '' }), 'no app', /no application/);
    failed(await keys(['rotate', '--app', app.id, '--root-key', join(work, 'missing.pem')]), 'missing root file', /cannot read the root key/);
    failed(await keys(['show', '--app', app.id, 'nope']), 'unknown kid', /404: Signing key not found/);
  });

  let secondKid: string;
  it('rotate: a new active key certified by the root file; the old one stays active', async () => {
    const r = ok(await keys(['rotate', '--app', app.id, '--root-key', rootFile, '--json']), 'rotate');
    const key = JSON.parse(r.stdout);
    expect(key).toMatchObject({ status: 'active' });
    secondKid = key.kid;
    expect((await listed()).map((k) => [k.kid, k.status])).toEqual([[firstKid, 'active'], [secondKid, 'active']]);
  });

  it('rotate with another root file: refused locally, no pending key left behind', async () => {
    const wrong = join(work, 'wrong-root.pem');
    writeFileSync(wrong, rootPair().rootPrivateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600 });
    failed(await keys(['rotate', '--app', app.id, '--root-key', wrong]), 'rotate with a wrong root', /is not the root key of application/);
    expect(await listed()).toHaveLength(2);
  });

  it('list (table and --json), show (the decoded certificate), retire', async () => {
    const table = ok(await keys(['list', '--app', app.id]), 'list');
    expect(table.stdout).toContain(firstKid);
    expect(table.stdout).toContain(secondKid);
    const json = JSON.parse(ok(await keys(['list', '--app', app.id, '--json']), 'list --json').stdout);
    expect(json.map((k: { kid: string }) => k.kid)).toEqual([firstKid, secondKid]);

    const shown = JSON.parse(ok(await keys(['show', '--app', app.id, secondKid, '--json']), 'show').stdout);
    expect(shown.decoded_certificate).toMatchObject({ v: 1, app_id: app.id, kid: secondKid, public_key: shown.public_key, not_before: shown.not_before, not_after: shown.not_after });
    expect(decodeCertificate(shown.certificate)?.kid).toBe(secondKid);
    const plain = ok(await keys(['show', '--app', app.id, secondKid]), 'show as a table');
    expect(plain.stdout).toContain(app.id);

    expect(ok(await keys(['retire', '--app', app.id, firstKid]), 'retire').stdout).toBe(`retired signing key ${firstKid}\n`);
    const list = await call(node.url, 'GET', '/signing_keys', { headers: app.headers });
    expect(list.body.retired).toEqual([firstKid]);
    expect(list.body.keys.map((k: { kid: string }) => k.kid)).toEqual([secondKid]);
    failed(await keys(['retire', '--app', app.id, firstKid]), 'retire twice', /409: .*already retired/);
  });

  it('the server never received the private root: not in its database files, not in its logs', async () => {
    const root = createPrivateKey(readFileSync(rootFile));
    const der = root.export({ format: 'der', type: 'pkcs8' });
    const seed = der.subarray(der.length - 32); // PKCS#8 Ed25519: the 32-byte seed ends the structure
    const pem = readFileSync(rootFile, 'utf8').split('\n').filter((l) => l && !l.startsWith('-----')).join('');
    const needles = [seed, der, Buffer.from(pem), Buffer.from(seed.toString('base64')), Buffer.from(seed.toString('base64url')), Buffer.from(seed.toString('hex')), Buffer.from(root.export({ format: 'jwk' }).d!)];
    const files = readdirSync(dir).filter((f) => f.startsWith('tollgate.db')).map((f) => join(dir, f));
    const contents = files.map((f) => readFileSync(f));
    // The scan can see what is there: the public root is stored in these files.
    const pinned = (await admin(node.url, 'GET', `/apps/${app.id}/root-key`)).body.public_key as string;
    expect(contents.some((c) => c.includes(Buffer.from(pinned)))).toBe(true);
    for (const content of contents) for (const needle of needles) expect(content.includes(needle)).toBe(false);
    const log = node.output.join('');
    expect(log.length).toBeGreaterThan(0); // trace level logs every request
    for (const needle of needles) expect(log.includes(needle.toString())).toBe(false);
  });

  it('apps create/update take --signatures, --offline-grace-seconds and --lease-renew-seconds', async () => {
    const apps = (args: string[]) => run(['--json', '--url', node.url, '--token', ADMIN_TOKEN, 'apps', ...args], work);
    const created = JSON.parse(ok(await apps(['create', 'Leases CLI', '--offline-grace-seconds', '7200', '--lease-renew-seconds', '900']), 'apps create').stdout);
    expect(created).toMatchObject({ offline_grace_seconds: 7200, lease_renew_seconds: 900, signatures: 'optional' });
    // required needs a key that can sign now: this new app has none (the server's 422, said in one line).
    failed(await apps(['update', created.id, '--signatures', 'required']), 'signatures required without a key', /signatures/);
    failed(await apps(['update', created.id, '--signatures', 'always']), '--signatures always', /--signatures must be optional or required/);
    // The app of these tests has an active key (keys init above).
    const updated = JSON.parse(ok(await apps(['update', app.id, '--signatures', 'required', '--offline-grace-seconds', '0', '--lease-renew-seconds', '60']), 'apps update').stdout);
    expect(updated).toMatchObject({ signatures: 'required', offline_grace_seconds: 0, lease_renew_seconds: 60 });
    expect((await admin(node.url, 'GET', `/apps/${app.id}`)).body).toMatchObject({ signatures: 'required', offline_grace_seconds: 0, lease_renew_seconds: 60 });
    ok(await apps(['update', app.id, '--signatures', 'optional']), 'back to optional');
  });

  it('help lists the keys commands', async () => {
    const r = ok(await run(['keys', '--help'], work), 'keys --help');
    for (const command of ['init', 'rotate', 'list', 'show', 'retire']) expect(r.stdout).toMatch(new RegExp(`^  ${command}\\b`, 'm'));
  });
});
