/**
 * What the dashboard's browser tests stand on: the built server as a child process on a
 * database of its own (SQLite by default, PostgreSQL with E2E_STORE=postgres), operators
 * created with the `tollgate operators` command as an operator would, and Debian's Chromium
 * driven by playwright-core (its own browser downloads cannot work on a machine without
 * network).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { chromium, type Browser, type Page } from 'playwright-core';

export const ROOT = resolve(import.meta.dirname, '../..');
export const OUTPUT = join(ROOT, 'dashboard/test/output');
/** The built CLI; E2E_CLI points elsewhere (a build of a work tree under review). */
const CLI = process.env.E2E_CLI ?? join(ROOT, 'dist/cli/main.js');
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const ADMIN_TOKEN = 'e2e-admin-token-' + randomBytes(12).toString('hex');

export interface RunningServer {
  url: string;
  env: NodeJS.ProcessEnv;
  /** The bootstrap token, for the test's own set-up calls (never used by the browser). */
  admin<T = unknown>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }>;
  client<T = unknown>(app: { api_key: string; api_secret: string }, method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<{ status: number; body: T }>;
  cli(args: string[], stdin?: string): Promise<{ code: number | null; stdout: string; stderr: string }>;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const probe = createServer();
    probe.once('error', fail);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => done(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

async function databaseUrl(dir: string): Promise<{ url: string; drop(): Promise<void> }> {
  if (process.env.E2E_STORE !== 'postgres') return { url: `sqlite:${join(dir, 'tollgate.db')}`, drop: async () => undefined };
  const server = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const name = 'tollgate_e2e_' + randomBytes(6).toString('hex');
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(server);
  url.pathname = '/' + name;
  return {
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: server });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

function run(args: string[], env: NodeJS.ProcessEnv, stdin?: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => done({ code, stdout, stderr }));
    child.stdin.end(stdin ?? '');
  });
}

export async function startServer(extraEnv: Record<string, string> = {}): Promise<RunningServer> {
  if (!existsSync(CLI)) throw new Error('dist/cli/main.js is missing: npm run test:e2e builds it (npm run build)');
  if (!existsSync(join(ROOT, 'dashboard/dist/index.html'))) throw new Error('dashboard/dist is missing: run npm run build');
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-e2e-'));
  const db = await databaseUrl(dir);
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: db.url,
    TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN, LOG_LEVEL: 'warn', ACCESS_LOG: 'off', NODE_ENV: 'production', DASHBOARD_DIR: join(ROOT, 'dashboard/dist'),
    ...extraEnv,
  };
  const migrate = await run(['migrate', '--create'], env);
  if (migrate.code !== 0) throw new Error(`tollgate migrate --create failed: ${migrate.stderr}`);
  const child: ChildProcess = spawn(process.execPath, [CLI, 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout?.on('data', (d: Buffer) => (log += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (log += d.toString()));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`the server exited (${child.exitCode}): ${log}`);
    try {
      if ((await fetch(url + '/readyz')).ok) break;
    } catch {
      // not listening yet
    }
    if (i > 300) throw new Error(`the server did not get ready: ${log}`);
    await new Promise((r) => setTimeout(r, 100));
  }

  const call = async <T>(method: string, path: string, headers: Record<string, string>, body?: unknown) => {
    const response = await fetch(url + path, {
      method, headers: { ...headers, ...(body !== undefined && { 'content-type': 'application/json' }) },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: (text ? JSON.parse(text) : null) as T };
  };
  return {
    url, env,
    admin: (method, path, body) => call(method, '/admin/v1' + path, { authorization: `Bearer ${ADMIN_TOKEN}` }, body),
    client: (app, method, path, body, headers = {}) => call(method, path, { 'x-api-key': app.api_key, 'x-api-secret': app.api_secret, ...headers }, body),
    cli: (args, stdin) => run(args, env, stdin),
    stop: async () => {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      await db.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Creates an operator with the CLI, the password on stdin as a script would give it. */
export async function createOperator(server: RunningServer, username: string, password: string, role: string): Promise<void> {
  const result = await server.cli(['operators', 'create', username, '--role', role, '--password-stdin'], password + '\n');
  if (result.code !== 0) throw new Error(`tollgate operators create failed (${result.code}): ${result.stderr}${result.stdout}`);
}

/** RFC 6238 (SHA-1, 30 s, 6 digits) from a base32 secret, as an authenticator app computes it. */
export function totp(secretBase32: string, at = Date.now(), stepOffset = 0): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = '';
  for (const ch of secretBase32.replace(/=+$/, '').toUpperCase()) {
    const value = alphabet.indexOf(ch);
    if (value < 0) throw new Error(`not base32: ${ch}`);
    bits += value.toString(2).padStart(5, '0');
  }
  const key = Buffer.from(bits.match(/.{8}/g)!.map((b) => parseInt(b, 2)));
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(at / 30_000) + stepOffset));
  const mac = createHmac('sha1', key).update(counter).digest();
  const offset = mac[mac.length - 1]! & 0xf;
  const code = (mac.readUInt32BE(offset) & 0x7fffffff) % 1_000_000;
  return code.toString().padStart(6, '0');
}

export const BROWSER_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

/** Debian's Chromium; playwright gives each launch a fresh, temporary user-data dir. */
export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: apt-get install -y chromium (.ci/run does)`);
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: BROWSER_ARGS });
}

export interface Watched { page: Page; cspViolations: string[]; pageErrors: string[] }

/** A page in a context of its own (its own cookies), at a width, watching for CSP reports and errors. */
export async function openPage(browser: Browser, width: number, options: { acceptDownloads?: boolean } = {}): Promise<Watched> {
  const context = await browser.newContext({ viewport: { width, height: 900 }, acceptDownloads: options.acceptDownloads ?? true });
  const page = await context.newPage();
  const watched: Watched = { page, cspViolations: [], pageErrors: [] };
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) watched.cspViolations.push(message.text());
  });
  page.on('pageerror', (error) => watched.pageErrors.push(String(error)));
  return watched;
}

const AXE = readFileSync(join(ROOT, 'node_modules/axe-core/axe.min.js'), 'utf8');

/**
 * axe-core's checks (WCAG 2.x A and AA) on the page as it stands. The source goes in through
 * the DevTools protocol (page.evaluate), not a <script> tag, which the page's CSP would block.
 */
export async function axeViolations(page: Page): Promise<{ id: string; impact: string; help: string; nodes: string[] }[]> {
  await page.evaluate(AXE);
  const result = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(ctx: unknown, opts: unknown): Promise<{ violations: { id: string; impact: string; help: string; nodes: { target: string[] }[] }[] }> } }).axe;
    const answer = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } });
    return answer.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(' ')) }));
  });
  return result.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

export function screenshotPath(name: string): string {
  mkdirSync(OUTPUT, { recursive: true });
  return join(OUTPUT, name + '.png');
}

/** Signs in through the login form; `code` answers the TOTP step when the server asks for it. */
export async function signIn(page: Page, base: string, username: string, password: string, code?: () => string): Promise<void> {
  if (!page.url().startsWith(base + '/dashboard')) await page.goto(base + '/dashboard/');
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  if (code) {
    await page.getByLabel('Authentication code').fill(code());
    await page.getByRole('button', { name: 'Verify' }).click();
  }
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

/** Opens a dashboard page and waits until its requests have settled. */
export async function visit(page: Page, base: string, path: string): Promise<void> {
  await page.goto(base + '/dashboard' + path);
  await page.waitForLoadState('networkidle');
  await page.locator('main h1').first().waitFor();
}

/** Clicks the confirm button of the open dialog (after checking it is the one expected). */
export async function confirmDialog(page: Page, title: RegExp | string, button: string, typed?: string): Promise<void> {
  const dialog = page.getByRole('dialog');
  await dialog.getByRole('heading', { name: title }).waitFor();
  if (typed !== undefined) await dialog.getByRole('textbox').fill(typed);
  await dialog.getByRole('button', { name: button }).click();
  await dialog.waitFor({ state: 'hidden' });
}

/**
 * Visits each page at 1280 and 390 px, photographs it, and returns what is wrong: a page wider than
 * the window, an error box, a serious or critical axe-core violation. (operator-flows.test.ts does the
 * same inline for the older pages.)
 */
export async function pageProblems(watched: Watched, base: string, pages: [name: string, path: string][]): Promise<string[]> {
  const { page } = watched;
  const problems: string[] = [];
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 900 });
    for (const [name, path] of pages) {
      try {
        await visit(page, base, path);
      } catch (error) {
        await page.screenshot({ path: screenshotPath(`${name}-${width}-failed`), fullPage: true });
        throw new Error(`${name} at ${width}px did not render: ${String(error)}; page errors: ${watched.pageErrors.join(' | ')}`);
      }
      await page.screenshot({ path: screenshotPath(`${name}-${width}`), fullPage: true });
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      if (overflow > 1) problems.push(`${name} at ${width}px is ${overflow}px wider than the window`);
      if ((await page.getByTestId('error').count()) > 0) problems.push(`${name}: ${await page.getByTestId('error').first().textContent()}`);
      for (const v of await axeViolations(page)) problems.push(`${name} at ${width}px: ${v.impact} ${v.id} (${v.help}) on ${v.nodes.join(', ')}`);
    }
  }
  await page.setViewportSize({ width: 1280, height: 900 });
  return problems;
}

/** A server, its operators and one app, and a browser page signed in as the owner: what a feature page's file starts from. */
export interface Stage<A> {
  server: RunningServer;
  browser: Browser;
  watched: Watched;
  page: Page;
  app: A;
}

export interface StageOptions {
  /** The server's extra environment (startServer). */
  env?: Record<string, string>;
  /** Created with the owner role; the page signs in as this operator. */
  owner: { username: string; password: string };
  /** Further operators, each with its role. */
  others?: { username: string; password: string; role: string }[];
  /** The body of POST /apps. */
  app: Record<string, unknown>;
}

/**
 * The set-up the feature files (sales, tiers, webhooks-events) shared line for line: a server, the
 * operators, one app (its 201 body), a browser and a 1280 px page signed in as the owner. A failure
 * half-way stops what was started, as the file's afterAll would not know of it.
 */
export async function openStage<A = { id: string; api_key: string; api_secret: string }>(options: StageOptions): Promise<Stage<A>> {
  const server = await startServer(options.env);
  let browser: Browser | undefined;
  try {
    await createOperator(server, options.owner.username, options.owner.password, 'owner');
    for (const o of options.others ?? []) await createOperator(server, o.username, o.password, o.role);
    const created = await server.admin<A>('POST', '/apps', options.app);
    if (created.status !== 201) throw new Error(`POST /apps answered ${created.status}: ${JSON.stringify(created.body)}`);
    browser = await launchBrowser();
    const watched = await openPage(browser, 1280);
    await signIn(watched.page, server.url, options.owner.username, options.owner.password);
    return { server, browser, watched, page: watched.page, app: created.body };
  } catch (err) {
    await browser?.close();
    await server.stop();
    throw err;
  }
}

/** The afterAll of openStage: the browser, then the server (either may be missing if the set-up failed). */
export async function closeStage(stage: Partial<Stage<unknown>> | undefined): Promise<void> {
  await stage?.browser?.close();
  await stage?.server?.stop();
}
