import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { sealKeys, type Config } from './config/index.js';
import { cryptoRandom, systemClock, type Clock, type PasswordHasher, type RandomSource } from './domain/deps.js';
import { argon2Hasher } from './domain/password.js';
import { bootstrapAdminToken } from './domain/admin/tokens.js';
import { observeCaches } from './domain/caches.js';
import { startBlobSweeper } from './domain/files.js';
import { createServices, type Services } from './domain/services.js';
import { KeySeal, kek } from './domain/signing/seal.js';
import { sealReport } from './domain/signing/reseal.js';
import { buildServer } from './http/server.js';
import { prettyStream, stdoutLog, type LogOutput } from './http/log-output.js';
import { createStore } from './store/index.js';
import { migrate } from './store/migrate.js';
import { cacheTtlFor, openDb } from './store/open.js';
import { DatabaseCounters, MemoryCounters, type Counters } from './store/counters.js';
import { RedisCounters } from './store/redis-counters.js';
import type { Db } from './store/db.js';
import { OutboxRunner } from './domain/webhooks/runner.js';

export interface Overrides {
  clock?: Clock;
  random?: RandomSource;
  hasher?: PasswordHasher;
  logStream?: NodeJS.WritableStream;
  /** Tests only, which build hundreds of servers: share compiled schemas between them (src/http/compile-cache.ts). */
  reuseCompiledSchemas?: boolean;
  /** Tests only: false answers GET /app_context through Fastify alone (src/http/fast-path.ts), to compare the paths. */
  fastPath?: boolean;
}

export interface Tollgate {
  server: FastifyInstance;
  services: Services;
  /** Set on the very first start with no admin token anywhere: the token created for the operator, to print once. */
  initialAdminToken: string | null;
  /** The webhook delivery worker and the event sweeps of this node. */
  outbox: OutboxRunner;
  /** Lets out the log lines still buffered (the first-start banner follows "Server listening"). */
  flushLog(): void;
  close(): Promise<void>;
}

/** The server options that come from the configuration alone (tests build a second server from them). */
export function serverSettings(config: Readonly<Config>) {
  return {
    adminToken: config.adminToken,
    trustProxy: config.trustProxy,
    maxUploadBytes: config.maxUploadBytes,
    metricsToken: config.metricsToken,
    corsOrigins: config.corsOrigins,
    accessLog: config.accessLog,
    downloadPace: { minBytesPerSecond: config.downloadMinBytesPerSecond, graceMs: config.downloadGraceMs },
    timeouts: { requestMs: config.requestTimeoutMs, headersMs: config.headersTimeoutMs, keepAliveMs: config.keepAliveTimeoutMs },
    dashboard: { sessionIdleSeconds: config.adminSessionIdleSeconds, dir: config.dashboardDir },
  };
}

/** The one place that builds the store, the services and the server from a config. */
export async function createTollgate(config: Readonly<Config>, overrides: Overrides = {}): Promise<Tollgate> {
  const db = await openDb(config.databaseUrl, config);
  const counters = config.rateLimit ? rateLimitCounters(config, db) : null;
  try {
    if (counters instanceof RedisCounters) await counters.connect();
    await migrate(db);
    // Event lines go to the server's logger, which exists only once the server does (no event happens before).
    let log: FastifyBaseLogger | null = null;
    const services = await createServices({
      store: createStore(db),
      clock: overrides.clock ?? systemClock,
      random: overrides.random ?? cryptoRandom,
      hasher: overrides.hasher ?? argon2Hasher(),
      cacheTtlMs: cacheTtlFor(db),
      counters,
      log: {
        info: (obj, msg) => log?.info(obj, msg),
        warn: (obj, msg) => log?.warn(obj, msg),
        error: (obj, msg) => log?.error(obj, msg),
        debug: (obj, msg) => log?.debug(obj, msg),
        trace: (obj, msg) => log?.trace(obj, msg),
        enabled: (level) => (log as { isLevelEnabled?(level: string): boolean } | null)?.isLevelEnabled?.(level) ?? false,
      },
      seal: sealOf(config),
      webhookAllow: config.webhookAllowHosts ?? [],
    });
    const output = config.logLevel === 'silent' ? null : logOutput(config, overrides.logStream);
    const server = await buildServer({
      services,
      ...serverSettings(config),
      ...(output && { logStream: output.stream }),
      ...(overrides.reuseCompiledSchemas && { reuseCompiledSchemas: true }),
      ...(overrides.fastPath === false && { fastPath: false }),
      logger: config.logLevel === 'silent' ? false : { level: config.logLevel },
    });
    log = server.log;
    observeCaches(services.caches, services.log);
    if (counters instanceof RedisCounters) counters.logTo(server.log);
    services.stats.start();
    const outbox = new OutboxRunner(services, { timeoutMs: config.webhookTimeoutMs, retentionDays: config.eventRetentionDays, integrationEventRetentionDays: config.integrationEventRetentionDays });
    const blobSweeper = startBlobSweeper(services);
    server.addHook('onClose', async () => {
      await outbox.stop();
      await blobSweeper.stop();
      await services.stats.close(); // the last seconds of activity counts, while the database is still open
      await counters?.close();
      await db.close();
      output?.flush();
    });
    // A report that cannot be made (the database went away since the migration) must not stop the start.
    await reportSeal(services, server).catch((err: unknown) => server.log.warn({ cause: err instanceof Error ? err.message : String(err) }, 'could not check how the signing keys are sealed'));
    const initialAdminToken = await bootstrapAdminToken(services, config.adminToken !== null);
    outbox.start(); // last: a start that failed above leaves nothing running
    return { server, services, outbox, initialAdminToken, flushLog: () => output?.flush(), close: () => closeGracefully(server) };
  } catch (err) {
    await counters?.close();
    await db.close();
    throw err;
  }
}

export function sealOf(config: Readonly<Config>): KeySeal {
  const { current, old } = sealKeys(config);
  return new KeySeal(current && kek(current), old && kek(old));
}

/**
 * Says at start how the signing private keys are kept (docs/signing.md, "Sealed at rest"): a warning without a
 * key-encryption key (they sit in the database as plain PKCS#8), and with one, the keys still to reseal and
 * those this node cannot open (a backup restored without its KEK: they do not sign, and here is why).
 */
async function reportSeal(services: Services, server: FastifyInstance): Promise<void> {
  const seal = services.seal;
  if (seal.current === null) {
    server.log.warn({ event: 'signing_keys_unsealed' }, 'SIGNING_KEY_SEAL is not set: signing private keys are stored unsealed (plain PKCS#8) in the database, so every backup and database credential can sign answers and leases (docs/deploy.md, "Sealing the signing keys")');
  }
  const report = await sealReport(services.store, seal);
  if (seal.current !== null && report.plain + report.other > 0) {
    server.log.warn({ event: 'signing_keys_to_reseal', plain: report.plain, otherKek: report.other }, `${report.plain + report.other} signing keys are not sealed under SIGNING_KEY_SEAL yet: run \`tollgate reseal-keys\``);
  }
  for (const u of report.unopenable) server.log.error({ event: 'signing_key_sealed', appId: u.appId, kid: u.kid, cause: u.reason }, 'a signing key cannot be unsealed on this node: it does not sign');
}

/** stdout (buffered JSON, or pretty text), or the stream a test gave, in the configured format. */
function logOutput(config: Readonly<Config>, stream: NodeJS.WritableStream | undefined): LogOutput {
  if (!stream) return stdoutLog(config.logFormat);
  return { stream: config.logFormat === 'pretty' ? prettyStream(stream) : stream, flush: () => undefined };
}

/**
 * Redis when configured (shared by every node; each node's memory while it does not answer), else the database
 * for PostgreSQL (shared), else memory (SQLite: one process).
 */
function rateLimitCounters(config: Readonly<Config>, db: Db): Counters {
  if (config.redisUrl) return new RedisCounters(config.redisUrl, { commandTimeoutMs: config.redisTimeoutMs });
  return db.dialect === 'postgres' ? new DatabaseCounters(db) : new MemoryCounters();
}

/**
 * Stops accepting, lets requests in flight finish, then closes the pools.
 * Keep-alive connections that were busy when closing began turn idle only
 * later; close them as they do, or the server would wait for their timeout.
 */
async function closeGracefully(server: FastifyInstance): Promise<void> {
  const sweep = setInterval(() => server.server.closeIdleConnections(), 50);
  try {
    await server.close();
  } finally {
    clearInterval(sweep);
  }
}
