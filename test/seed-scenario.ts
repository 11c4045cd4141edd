/**
 * The seed's client answers, replayed by a fixed script (test/seed-bytes.test.ts). Self-contained on
 * purpose: it uses only the harness and the key fixtures, which the seed release has too, so the same
 * file captured test/fixtures/seed-answers.json on the seed's code (commit 885b55a) and replays it on
 * today's. What changes between runs (random ids, codes, tokens, generated usernames, nonces) is
 * replaced by placeholders; everything else is compared byte for byte.
 */
import { PASSWORD, type Harness } from './helpers.js';
import { setUpKeys } from './signing-fixtures.js';

export interface Recorded {
  name: string;
  status: number;
  /** The names of the answer's headers, sorted (signed answers carry the two signature headers). */
  headers: string[];
  /** The body bytes, with run-dependent values replaced. */
  body: string;
}

const VOLATILE_HEADERS = new Set(['date', 'connection', 'keep-alive', 'x-request-id']);

export function normalise(body: string, secrets: readonly string[]): string {
  let out = body;
  for (const s of secrets) out = out.split(s).join('<secret>');
  return out
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uuid>')
    .replace(/user_[a-z2-7]{12}/g, '<generated>')
    .replace(/"session_token":"[^"]+"/g, '"session_token":"<token>"');
}

/** Runs the script on a fresh harness; `signed`: every request carries a Tollgate-Nonce (the app has a key). */
export async function seedAnswers(h: Harness, signed: boolean): Promise<Recorded[]> {
  const app = await h.createApp({ name: 'Seed app' });
  await h.admin('PUT', `/apps/${app.id}/variables/motd`, { value: 'hello' });
  if (signed) await setUpKeys(h, app);
  const [code60, codeSignUp] = await h.licenses(app, { count: 2, minutes: 60 });
  const { code: codeLifetime } = await h.license(app, { lifetime: true });
  const secrets = [code60!, codeSignUp!, codeLifetime!];
  const out: Recorded[] = [];
  let n = 0;
  async function record(name: string, method: 'GET' | 'POST', url: string, payload?: unknown, headers: Record<string, string> = {}) {
    const res = await h.client(app, method, url, payload, { ...headers, ...(signed && { 'tollgate-nonce': `seed-nonce-${String(++n).padStart(8, '0')}` }) });
    out.push({
      name, status: res.statusCode, headers: Object.keys(res.headers).filter((k) => !VOLATILE_HEADERS.has(k)).sort(), body: normalise(res.body, secrets),
    });
    return res;
  }
  await record('sign_up', 'POST', '/sign_up', { username: 'alice', password: PASSWORD });
  await record('sign_up taken', 'POST', '/sign_up', { username: 'ALICE', password: PASSWORD });
  await record('app_context inactive (legacy)', 'GET', '/app_context', undefined, { 'x-api-username': 'alice', 'x-api-password': PASSWORD });
  h.clock.advance(1234);
  await record('activate_license', 'POST', '/activate_license', { code: code60, username: 'alice', password: PASSWORD });
  await record('activate_license used', 'POST', '/activate_license', { code: code60, username: 'alice', password: PASSWORD });
  await record('sign_up_with_license_code', 'POST', '/sign_up_with_license_code', { code: codeSignUp });
  await record('sign_up_with_license_code lifetime', 'POST', '/sign_up_with_license_code', { code: codeLifetime });
  const login = await record('login', 'POST', '/auth/login', { credentials: { username: 'alice', password: PASSWORD } });
  const token = login.json().session_token as string;
  await record('app_context bearer', 'GET', '/app_context', undefined, { authorization: `Bearer ${token}` });
  await record('app_context legacy', 'GET', '/app_context', undefined, { 'x-api-username': 'alice', 'x-api-password': PASSWORD });
  await record('app_context code', 'GET', '/app_context', undefined, { 'x-api-license-code': codeSignUp! });
  await record('app_context lifetime code', 'GET', '/app_context', undefined, { 'x-api-license-code': codeLifetime! });
  await record('app_context anonymous refused', 'GET', '/app_context');
  h.clock.minutes(61);
  await record('app_context expired', 'GET', '/app_context', undefined, { authorization: `Bearer ${token}` });
  return out;
}
