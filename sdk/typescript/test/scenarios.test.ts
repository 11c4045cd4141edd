/**
 * The shared failure script of issue 27 (sdk/test-vectors/scenarios.json), run
 * against the real server and the MITM proxy: for each scenario the online
 * call fails with the listed error class, and checkAccess() falls back to the
 * lease, or throws, exactly as listed. The Python and C++ suites run the same
 * file with their own classes.
 */
import { readFileSync } from 'node:fs';
import { createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  MemoryLeaseStore, TollgateError, TollgateException, TollgateLeaseError, TollgateNetworkError, TollgateUnavailableError, TollgateVerificationError,
  type TollgateClient,
} from '../src/index.js';
import { freePort, PASSWORD, proxy, ROOT, startServer, type Server, type TestApp } from './server.js';

interface Scenario {
  name: string;
  online_error: string;
  network_reason?: string;
  max_elapsed_ms?: number;
  unavailable_verified?: boolean;
  verdict?: string;
  refused?: { status: number; code: string; ban_reason?: string };
  check_access: { source?: string; lease_verdict?: string; error?: string; code?: string; verdict?: string };
  lease_after?: string;
}
const script = JSON.parse(readFileSync(join(ROOT, 'sdk/test-vectors/scenarios.json'), 'utf8')) as { scenarios: Scenario[] };

/** The model's class names (docs/signing.md) → this SDK's classes. */
const CLASSES: Record<string, new (...a: never[]) => TollgateException> = {
  NetworkError: TollgateNetworkError,
  ServiceUnavailable: TollgateUnavailableError,
  VerificationError: TollgateVerificationError,
  Refused: TollgateError,
  LeaseError: TollgateLeaseError,
};

let server: Server;
let app: TestApp;
let aliceId: string;
const closers: (() => Promise<unknown>)[] = [];

/** A TCP listener that accepts and never sends a byte (the sockets are kept so the test can end them). */
async function tarpit(): Promise<string> {
  const sockets: Socket[] = [];
  const srv: NetServer = createNetServer((s) => void sockets.push(s));
  const port = await freePort();
  await new Promise<void>((r) => srv.listen(port, '127.0.0.1', () => r()));
  closers.push(() => new Promise((r) => {
    for (const s of sockets) s.destroy();
    srv.close(r);
  }));
  return `http://127.0.0.1:${port}`;
}

/** The base URL each scenario's client talks to (its `server` line in scenarios.json). */
async function baseUrlFor(name: string): Promise<string> {
  switch (name) {
    case 'server_down':
      return `http://127.0.0.1:${await freePort()}`;
    case 'tarpit':
      return tarpit();
    case 'unsigned_503': {
      const p = await proxy(server.url, async () => ({
        status: 503,
        headers: { 'content-type': 'application/json', 'retry-after': '2' },
        body: Buffer.from('{"detail":"The service is temporarily unavailable; try again shortly","code":"service_unavailable"}'),
      }));
      closers.push(p.close);
      return p.url;
    }
    case 'unsigned_page': {
      const p = await proxy(server.url, async () => ({ status: 200, headers: { 'content-type': 'text/html' }, body: Buffer.from('<html>Sign in to the hotel Wi-Fi</html>') }));
      closers.push(p.close);
      return p.url;
    }
    case 'verified_ban': {
      const p = await proxy(server.url, (_req, forward) => forward());
      closers.push(p.close);
      return p.url;
    }
    case 'forged_answer': {
      const p = await proxy(server.url, async (_req, forward) => {
        const a = await forward();
        const body = Buffer.from(a.body);
        if (body.length > 0) body[body.length - 1] = body[body.length - 1]! ^ 0x01;
        return { ...a, body };
      });
      closers.push(p.close);
      return p.url;
    }
    default:
      throw new Error(`scenarios.json has a scenario this test does not know: ${name}`);
  }
}

beforeAll(async () => {
  server = await startServer();
  app = await server.app({ offline_grace_seconds: 86400 });
  aliceId = await server.activeUser(app, 'alice');
});
afterAll(() => server?.stop());

describe('sdk/test-vectors/scenarios.json: the same outcomes in every SDK', () => {
  it('lists the scenarios of issue 27', () => {
    expect(script.scenarios.map((s) => s.name)).toEqual(['server_down', 'tarpit', 'unsigned_503', 'unsigned_page', 'verified_ban', 'forged_answer']);
  });

  for (const sc of script.scenarios) {
    it(sc.name, async () => {
      try {
        // A fresh client whose store holds a valid lease for alice, fetched through the real server.
        const store = new MemoryLeaseStore();
        const auth = { username: 'alice', password: PASSWORD };
        await server.client(app, { leaseStore: store }).createLease(auth);
        const client: TollgateClient = server.client(app, { leaseStore: store, baseUrl: await baseUrlFor(sc.name), connectTimeoutMs: 1000, timeoutMs: 1500 });

        if (sc.name === 'verified_ban') {
          const ban = await server.admin('POST', `/apps/${app.id}/bans`, { type: 'user', value: aliceId, reason: 'chargeback' });
          expect(ban.status).toBe(201);
          closers.push(() => server.admin('DELETE', `/apps/${app.id}/bans/${ban.body.id}`));
        }

        const started = performance.now();
        const online = await client.getAppContext(auth).then(() => null, (e: unknown) => e);
        const elapsed = performance.now() - started;
        expect(online, String(online)).toBeInstanceOf(CLASSES[sc.online_error]);
        if (sc.network_reason) expect((online as TollgateNetworkError).reason).toBe(sc.network_reason);
        if (sc.max_elapsed_ms) expect(elapsed).toBeLessThan(sc.max_elapsed_ms);
        if (sc.unavailable_verified !== undefined) {
          expect((online as TollgateUnavailableError).verified).toBe(sc.unavailable_verified);
          expect((online as TollgateUnavailableError).retryAfter).toBe(2);
        }
        if (sc.verdict) expect((online as TollgateVerificationError).verdict).toBe(sc.verdict);
        if (sc.refused) {
          const r = online as TollgateError;
          expect({ status: r.status, code: r.code, ban_reason: r.banReason }).toEqual(sc.refused);
        }

        const access = await client.checkAccess(auth).then((a) => a, (e: unknown) => e);
        const expected = sc.check_access;
        if (expected.source !== undefined) {
          expect(access, String(access)).toMatchObject({ source: expected.source });
          if (expected.source === 'lease') {
            const a = access as { lease: { userId: string }; cause: unknown };
            expect(a.lease.userId).toBe(aliceId); // lease_verdict ok: checkLease() answered
            expect(a.cause).toBeInstanceOf(CLASSES[sc.online_error]);
          }
        } else {
          expect(access).toBeInstanceOf(CLASSES[expected.error!]);
          if (expected.code) expect((access as TollgateError).code).toBe(expected.code);
          if (expected.verdict) expect((access as TollgateVerificationError).verdict).toBe(expected.verdict);
        }

        if (sc.lease_after) {
          const lease = await client.checkLease().then(() => 'ok', (e: unknown) => (e instanceof TollgateLeaseError ? e.verdict : String(e)));
          expect(lease).toBe(sc.lease_after);
        }
      } finally {
        for (const close of closers.splice(0)) await close();
      }
    }, 30_000);
  }
});
