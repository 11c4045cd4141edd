import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliCompressSync, brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { acceptedEncodings, DASHBOARD_CSP, PACKAGE_DASHBOARD_DIR } from '../src/http/dashboard.js';
import { expectError, harness, type Harness } from './helpers.js';

/** GET /dashboard (issue 16, DASHBOARD-API.md "Serving"): the built files under a strict CSP, the SPA fallback, and no way out of the directory. */

let h: Harness;
let dir: string;
afterEach(async () => {
  const done = h;
  h = undefined as unknown as Harness; // a test without a harness must not close the previous one's again
  await done?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = '';
});

const INDEX = '<!doctype html><title>Tollgate</title><script type="module" src="/dashboard/assets/index-abc123.js"></script>';

/** A stand-in for `npm run build`'s output, in a directory of its own (DASHBOARD_DIR). */
function fakeBuild(): string {
  const root = mkdtempSync(join(tmpdir(), 'tollgate-dash-'));
  const dist = join(root, 'dist');
  mkdirSync(join(dist, 'assets'), { recursive: true });
  writeFileSync(join(dist, 'index.html'), INDEX);
  writeFileSync(join(dist, 'assets', 'index-abc123.js'), 'console.log("dashboard")');
  writeFileSync(join(dist, 'assets', 'index-abc123.css'), 'body{}');
  writeFileSync(join(dist, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
  writeFileSync(join(root, 'secret.txt'), 'outside the dashboard');
  dir = root;
  return dist;
}

const SCRIPT = 'console.log("dashboard");'.repeat(50);

/** fakeBuild plus what `npm run build` writes beside each text file: NAME.br and NAME.gz. */
function fakeCompressedBuild(): string {
  const dist = fakeBuild();
  writeFileSync(join(dist, 'assets', 'index-abc123.js'), SCRIPT);
  for (const [name, body] of [['assets/index-abc123.js', SCRIPT], ['index.html', INDEX]] as const) {
    writeFileSync(join(dist, name + '.br'), brotliCompressSync(body));
    writeFileSync(join(dist, name + '.gz'), gzipSync(body));
  }
  return dist;
}

describe('compressed dashboard files (issue 21 item 8)', () => {
  const js = '/dashboard/assets/index-abc123.js';
  const get = (url: string, accept?: string) => h.inject({ method: 'GET', url, headers: accept === undefined ? {} : { 'accept-encoding': accept } });

  it('brotli to a browser that takes it, gzip to one that takes only gzip, each with its length and Vary', async () => {
    h = await harness({ env: { DASHBOARD_DIR: fakeCompressedBuild() } });
    const br = await get(js, 'gzip, deflate, br, zstd');
    expect(br.statusCode).toBe(200);
    expect(br.headers['content-encoding']).toBe('br');
    expect(brotliDecompressSync(br.rawPayload).toString()).toBe(SCRIPT);
    expect(Number(br.headers['content-length'])).toBe(br.rawPayload.length);
    expect(br.rawPayload.length).toBeLessThan(SCRIPT.length / 5);
    expect(br.headers.vary).toBe('Accept-Encoding');
    expect(br.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(br.headers['cache-control']).toBe('public, max-age=31536000, immutable');

    const gz = await get(js, 'gzip');
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gz.rawPayload).toString()).toBe(SCRIPT);
    expect(Number(gz.headers['content-length'])).toBe(gz.rawPayload.length);
    expect(gz.headers.vary).toBe('Accept-Encoding');

    const page = await get('/dashboard/apps/5d1c', 'br');
    expect(page.headers['content-encoding']).toBe('br');
    expect(brotliDecompressSync(page.rawPayload).toString()).toBe(INDEX);
    expect(page.headers['cache-control']).toBe('no-cache');
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
  });

  it('identity when nothing is accepted, a coding is refused with q=0, or no compressed copy exists; Vary still set', async () => {
    h = await harness({ env: { DASHBOARD_DIR: fakeCompressedBuild() } });
    for (const accept of [undefined, '', 'identity', 'br;q=0, gzip;q=0', '*;q=0', 'deflate']) {
      const res = await get(js, accept);
      expect(res.headers['content-encoding'], String(accept)).toBeUndefined();
      expect(res.body, String(accept)).toBe(SCRIPT);
      expect(res.headers.vary, String(accept)).toBe('Accept-Encoding');
    }
    expect((await get(js, 'br;q=0, *')).headers['content-encoding']).toBe('gzip');
    const css = await get('/dashboard/assets/index-abc123.css', 'br, gzip');
    expect(css.headers['content-encoding']).toBeUndefined();
    expect(css.body).toBe('body{}');
    expect(css.headers.vary).toBe('Accept-Encoding');
    const head = await h.inject({ method: 'HEAD', url: js, headers: { 'accept-encoding': 'br' } });
    expect(head.statusCode).toBe(200);
    expect(head.headers['content-encoding']).toBe('br');
  });

  it('reads Accept-Encoding as RFC 9110 does', () => {
    expect([...acceptedEncodings('gzip, deflate, br')]).toEqual(['br', 'gzip']);
    expect([...acceptedEncodings('BR;Q=0.5')]).toEqual(['br']);
    expect([...acceptedEncodings('gzip;q=0.001, br;q=0')]).toEqual(['gzip']);
    expect([...acceptedEncodings('*')]).toEqual(['br', 'gzip']);
    expect([...acceptedEncodings('gzip;q=bogus')]).toEqual([]);
    expect([...acceptedEncodings(undefined)]).toEqual([]);
  });
});

describe('serving the built dashboard', () => {
  it('index.html at /dashboard and /dashboard/, with the CSP, nosniff, no framing and no-cache', async () => {
    h = await harness({ env: { DASHBOARD_DIR: fakeBuild() } });
    for (const url of ['/dashboard', '/dashboard/']) {
      const res = await h.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(200);
      expect(res.body).toBe(INDEX);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.headers['content-security-policy']).toBe(
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'",
      );
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['cache-control']).toBe('no-cache');
    }
    expect(DASHBOARD_CSP).not.toMatch(/unsafe/);
  });

  it('hashed assets are immutable with their own type; other files no-cache; HEAD works', async () => {
    h = await harness({ env: { DASHBOARD_DIR: fakeBuild() } });
    const js = await h.inject({ method: 'GET', url: '/dashboard/assets/index-abc123.js' });
    expect(js.statusCode).toBe(200);
    expect(js.body).toBe('console.log("dashboard")');
    expect(js.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(js.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    const css = await h.inject({ method: 'GET', url: '/dashboard/assets/index-abc123.css' });
    expect(css.headers['content-type']).toBe('text/css; charset=utf-8');
    const icon = await h.inject({ method: 'GET', url: '/dashboard/favicon.svg' });
    expect(icon.headers['content-type']).toBe('image/svg+xml');
    expect(icon.headers['cache-control']).toBe('no-cache');
    const head = await h.inject({ method: 'HEAD', url: '/dashboard/assets/index-abc123.js' });
    expect(head.statusCode).toBe(200);
    expect(head.body).toBe('');
  });

  it('client-side routes get index.html; a missing file with an extension is a 404', async () => {
    h = await harness({ env: { DASHBOARD_DIR: fakeBuild() } });
    for (const url of ['/dashboard/apps', '/dashboard/apps/5d1c/users/9a?tab=devices', '/dashboard/audit/']) {
      const res = await h.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(200);
      expect(res.body, url).toBe(INDEX);
    }
    expectError(await h.inject({ method: 'GET', url: '/dashboard/assets/gone-000.js' }), 404, 'not_found');
  });

  it('never serves a file outside the directory, however the path is spelled', async () => {
    h = await harness({ env: { DASHBOARD_DIR: fakeBuild() } });
    const tries = [
      '/dashboard/../secret.txt', '/dashboard/%2e%2e/secret.txt', '/dashboard/assets/%2e%2e/%2e%2e/secret.txt', '/dashboard/..%2fsecret.txt',
      '/dashboard/%2e%2e%2fsecret.txt', '/dashboard/....//secret.txt', '/dashboard/%00', '/dashboard/..%5csecret.txt', '/dashboard//etc/passwd',
      '/dashboard/%2fetc%2fpasswd', '/dashboard/assets/..%2f..%2f..%2f..%2f..%2fetc%2fpasswd',
    ];
    for (const url of tries) {
      const res = await h.inject({ method: 'GET', url });
      expect(res.body, url).not.toContain('outside the dashboard');
      expect(res.body, url).not.toContain('root:');
      expect(res.statusCode, url).toBeLessThan(500);
    }
  });

  it('no build: 503 dashboard_not_built telling what to run, in {detail, code}', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'tollgate-nodash-'));
    dir = empty;
    h = await harness({ env: { DASHBOARD_DIR: join(empty, 'dist') } });
    for (const url of ['/dashboard', '/dashboard/apps', '/dashboard/assets/index.js']) {
      const res = expectError(await h.inject({ method: 'GET', url }), 503, 'dashboard_not_built');
      expect(res.detail).toBe('run npm run build');
    }
  });

  it('by default it looks in the package’s dashboard/dist, not the working directory', () => {
    expect(PACKAGE_DASHBOARD_DIR).toBe(join(import.meta.dirname, '..', 'dashboard', 'dist') + '/');
  });
});
