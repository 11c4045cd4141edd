import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import { base32Decode, hotp, totpStep } from '../src/domain/admin/totp.js';
import type { Harness } from './helpers.js';

export const OPERATOR_PASSWORD = 'operator password 0123';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** A signed-in dashboard session, as a browser holds it. */
export interface Session {
  cookie: string;
  csrf: string;
  /** A call with the cookie, and the CSRF header on anything but GET (as the pages send it). */
  call(method: Method, url: string, payload?: unknown, headers?: Record<string, string>): Promise<LightMyRequestResponse>;
}

/** Creates an operator through the API with the environment's (owner) token; returns its id. */
export async function makeOperator(h: Harness, username: string, role: string, password = OPERATOR_PASSWORD): Promise<string> {
  const res = await h.admin('POST', '/operators', { username, password, role });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().id;
}

export function login(h: Harness, username: string, password = OPERATOR_PASSWORD, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  return h.inject({ method: 'POST', url: '/admin/v1/session', payload: { username, password, ...extra }, headers });
}

/** A sign-in from a given client address. */
export function loginFrom(h: Harness, remoteAddress: string, username: string, password = OPERATOR_PASSWORD, extra: Record<string, unknown> = {}) {
  return h.inject({ method: 'POST', url: '/admin/v1/session', payload: { username, password, ...extra }, remoteAddress });
}

/** The cookie's value from a sign-in answer. */
export function cookieOf(res: LightMyRequestResponse): string {
  const header = String(res.headers['set-cookie']);
  const m = /^tollgate_session=([^;]*)/.exec(header);
  if (!m) throw new Error(`no session cookie in ${header}`);
  return m[1]!;
}

export function sessionFrom(h: Harness, res: LightMyRequestResponse): Session {
  expect(res.statusCode, res.body).toBe(200);
  const cookie = cookieOf(res);
  const csrf = res.json().csrf_token as string;
  return {
    cookie,
    csrf,
    call: (method, url, payload, headers = {}) =>
      h.inject({
        method, url: `/admin/v1${url}`,
        headers: { cookie: `tollgate_session=${cookie}`, ...(method !== 'GET' && { 'x-csrf-token': csrf }), ...headers },
        ...(payload !== undefined && { payload: payload as object }),
      }),
  };
}

export async function signIn(h: Harness, username: string, password = OPERATOR_PASSWORD, totp?: string): Promise<Session> {
  return sessionFrom(h, await login(h, username, password, totp === undefined ? {} : { totp }));
}

/** Signs in, sets up TOTP and confirms it; the clock moves to the next step, so the confirming code is not reused. */
export async function withTotp(h: Harness, username: string): Promise<{ session: Session; secret: string }> {
  const session = await signIn(h, username);
  const { secret } = (await session.call('POST', '/session/totp')).json();
  expect((await session.call('POST', '/session/totp/confirm', { code: totpCode(secret, h.clock.ms) })).statusCode).toBe(200);
  h.clock.advance(30_000);
  return { session, secret };
}

/** The authenticator app's code at this clock time (and `steps` steps later or earlier). */
export function totpCode(secret: string, nowMs: number, steps = 0): string {
  return hotp(base32Decode(secret), totpStep(nowMs) + steps);
}

/** An admin call with a given bearer token. */
export function withToken(h: Harness, token: string, method: Method, url: string, payload?: unknown) {
  return h.inject({ method, url: `/admin/v1${url}`, headers: { authorization: `Bearer ${token}` }, ...(payload !== undefined && { payload: payload as object }) });
}
