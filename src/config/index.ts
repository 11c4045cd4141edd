import { readFileSync } from 'node:fs';
import { parseIpRange } from '../net/address.js';
import { PROXY_KEYWORDS, familiesTrusted } from '../net/proxy.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** The whole configuration, read once at start-up and frozen. */
export interface Config {
  port: number;
  host: string;
  databaseUrl: string;
  adminToken: string | null;
  /** Proxies whose X-Forwarded-For is honoured; null trusts none (the socket address is the client). */
  trustProxy: string[] | null;
  logLevel: LogLevel;
  /** One info line per request (method, route, status, time, client IP, app, error code); off: none. */
  accessLog: boolean;
  /** json: one JSON object a line, for machines; pretty: one readable line per entry, for people at a terminal. */
  logFormat: 'json' | 'pretty';
  redisUrl: string | null;
  /** How long a Redis command may go unanswered before the node counts rate limits on its own. */
  redisTimeoutMs: number;
  rateLimit: boolean;
  maxUploadBytes: number;
  pgPoolSize: number;
  pgStatementTimeoutMs: number;
  /** Milliseconds to open a PostgreSQL connection, and to wait for a free pooled one. */
  pgConnectTimeoutMs: number;
  /** Milliseconds the client waits for a query's answer before it drops the connection (a frozen server). */
  pgQueryTimeoutMs: number;
  pgSsl: 'off' | 'on' | 'no-verify';
  /** When set, GET /metrics serves Prometheus metrics to `Authorization: Bearer <this>`; unset, /metrics does not exist. */
  metricsToken: string | null;
  /** Browser origins allowed to call the client interface (CORS); null: CORS off. */
  corsOrigins: string[] | null;
  sqliteSynchronous: 'normal' | 'full';
  /** The whole request (headers and body) must arrive within this; authenticated admin bodies only need to keep moving. */
  requestTimeoutMs: number;
  /** The request headers must arrive within this (capped at requestTimeoutMs). */
  headersTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** How long `serve` and `migrate` retry a database that does not answer at start before giving up (0: no retry). */
  databaseWaitMs: number;
  /** A dashboard session unused for this long has ended (it ends 12 hours after sign-in regardless). */
  adminSessionIdleSeconds: number;
  /** Where the built dashboard is; null: this package's dashboard/dist. */
  dashboardDir: string | null;
  /** The key-encryption key that seals signing private keys (32 bytes); null: they are stored unsealed. At most one of it and the file's. */
  signingKeySeal: Buffer | null;
  signingKeySealFile: Buffer | null;
  /** The previous key-encryption key during a rotation: opens keys, never seals. */
  signingKeySealOld: Buffer | null;
  signingKeySealOldFile: Buffer | null;
  /** A download whose reader takes fewer bytes a second than this over a grace window is cut; 0: never. */
  downloadMinBytesPerSecond: number;
  /** The window a download's reader is judged over, and the time it gets before the first judgement. */
  downloadGraceMs: number;
  /** Hosts, addresses and ranges a webhook may reach although private or plain http (development, tests); null: none. */
  webhookAllowHosts: string[] | null;
  /** One webhook attempt's whole exchange. */
  webhookTimeoutMs: number;
  /** How long events (and their deliveries) are kept. */
  eventRetentionDays: number;
  /** How long the ids of received store events (the sales' idempotency keys) are kept. */
  integrationEventRetentionDays: number;
}

/** One setting, its environment variable and `tollgate serve` flag, and how to read it. */
interface Setting<K extends keyof Config> {
  key: K;
  env: string;
  flag: string;
  description: string;
  parse(raw: string): Config[K];
}

export class ConfigError extends Error {
  constructor(readonly setting: string, message: string) {
    super(`invalid ${setting}: ${message}`);
    this.name = 'ConfigError';
  }
}

const fail = (message: string): never => {
  throw new Error(message);
};

/** A key-encryption key is an AES-256 key (src/domain/signing/seal.ts seals with it). */
const KEK_BYTES = 32;

/** A KEK as written in SIGNING_KEY_SEAL or its file: base64 (or base64url) of 32 bytes, or 64 hex digits. Null if neither. */
function parseKek(raw: string): Buffer | null {
  const text = raw.trim();
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, 'hex');
  if (!/^[A-Za-z0-9+/_-]{43}=?$/.test(text)) return null;
  const bytes = Buffer.from(text.replace(/\+/g, '-').replace(/\//g, '_').replace(/=$/, ''), 'base64url');
  return bytes.length === KEK_BYTES ? bytes : null;
}

const KEK_FORMAT = 'must be 32 random bytes as base64 (openssl rand -base64 32) or 64 hex digits';
const kekValue = (raw: string): Buffer => parseKek(raw) ?? fail(KEK_FORMAT);
/** A file holding a key-encryption key, read once here; the message never repeats its content. */
const kekFile = (path: string): Buffer => {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    return fail(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  return parseKek(text) ?? fail(`${path} ${KEK_FORMAT}`);
};

/** A connection timeout: never 0 (Node's "no limit", which lets slow senders hold connections forever), at most an hour. */
const milliseconds = (raw: string): number =>
  /^\d{1,7}$/.test(raw) && Number(raw) >= 100 && Number(raw) <= 3_600_000 ? Number(raw) : fail('must be an integer number of milliseconds from 100 to 3600000');

export const SETTINGS: { [K in keyof Config]: Setting<K> } = {
  port: {
    key: 'port', env: 'PORT', flag: '--port', description: 'TCP port to listen on (default 8080)',
    parse: (raw) => (/^\d{1,5}$/.test(raw) && Number(raw) <= 65535 ? Number(raw) : fail(`must be an integer from 0 to 65535, got "${raw}"`)),
  },
  host: {
    key: 'host', env: 'HOST', flag: '--host', description: 'address to bind (default 127.0.0.1)',
    parse: (raw) => (raw.trim() !== '' && !/\s/.test(raw) ? raw : fail('must be a host name or address')),
  },
  databaseUrl: {
    key: 'databaseUrl', env: 'DATABASE_URL', flag: '--database-url', description: 'sqlite:<path> (default sqlite:./data/tollgate.db) or postgres://…',
    parse: (raw) => {
      if (raw.startsWith('sqlite:') && raw.length > 'sqlite:'.length) return raw;
      if (/^postgres(ql)?:\/\//.test(raw)) return raw;
      return fail('must be sqlite:<path> or postgres://…');
    },
  },
  adminToken: {
    key: 'adminToken', env: 'TOLLGATE_ADMIN_TOKEN', flag: '--admin-token', description: 'an admin API token accepted as given (for automation)',
    parse: (raw) => (raw.length >= 16 && raw.length <= 256 && !/\s/.test(raw) ? raw : fail('must be 16 to 256 characters without whitespace')),
  },
  trustProxy: {
    key: 'trustProxy', env: 'TRUST_PROXY', flag: '--trust-proxy', description: 'comma-separated proxy addresses or CIDR ranges whose X-Forwarded-For is honoured',
    parse: (raw) => {
      const entries = raw.split(',').map((e) => e.trim()).filter(Boolean);
      if (entries.length === 0) return fail('must list at least one address or CIDR range');
      for (const e of entries) {
        if (PROXY_KEYWORDS.has(e)) continue;
        const range = parseIpRange(e);
        if (!range) fail(`"${e}" is not an IP address or CIDR range`);
        // Trusting every address lets any client write its own X-Forwarded-For: IP bans and limits would mean nothing.
        if (range?.prefix === 0) fail(`"${e}" trusts every address, so any client could forge X-Forwarded-For; list your proxies' addresses or subnets`);
        const alone = familiesTrusted([e]);
        if (alone.length > 0) fail(`"${e}" trusts every ${alone.join(' and ')} address, so any client could forge X-Forwarded-For; list your proxies' addresses or subnets`);
      }
      // Also in pieces (0.0.0.0/1,128.0.0.0/1): judged on the trust the server builds, not on each entry's prefix.
      const together = familiesTrusted(entries);
      if (together.length > 0) fail(`"${entries.join(',')}" together trust every ${together.join(' and ')} address, so any client could forge X-Forwarded-For; list your proxies' addresses or subnets`);
      return entries;
    },
  },
  logLevel: {
    key: 'logLevel', env: 'LOG_LEVEL', flag: '--log-level', description: `one of ${LOG_LEVELS.join(', ')} (default info)`,
    parse: (raw) => ((LOG_LEVELS as readonly string[]).includes(raw) ? (raw as LogLevel) : fail(`must be one of ${LOG_LEVELS.join(', ')}`)),
  },
  accessLog: {
    key: 'accessLog', env: 'ACCESS_LOG', flag: '--access-log', description: 'on (default: one info line per request) or off',
    parse: (raw) => (raw === 'on' ? true : raw === 'off' ? false : fail('must be "on" or "off"')),
  },
  logFormat: {
    key: 'logFormat', env: 'LOG_FORMAT', flag: '--log-format', description: 'json (default: one JSON object a line) or pretty (readable text)',
    parse: (raw) => (raw === 'json' || raw === 'pretty' ? raw : fail('must be json or pretty')),
  },
  redisUrl: {
    key: 'redisUrl', env: 'REDIS_URL', flag: '--redis-url', description: 'redis://… for shared rate-limit state (optional)',
    parse: (raw) => (/^rediss?:\/\//.test(raw) ? raw : fail('must be redis://… or rediss://…')),
  },
  redisTimeoutMs: {
    key: 'redisTimeoutMs', env: 'REDIS_TIMEOUT_MS', flag: '--redis-timeout-ms',
    description: 'how long a Redis command may go unanswered, in ms, before the node counts rate limits on its own (default 50)',
    parse: (raw) => (/^\d{1,5}$/.test(raw) && Number(raw) >= 1 && Number(raw) <= 10_000 ? Number(raw) : fail('must be an integer number of milliseconds from 1 to 10000')),
  },
  rateLimit: {
    key: 'rateLimit', env: 'RATE_LIMIT', flag: '--rate-limit', description: 'on (default) or off',
    parse: (raw) => (raw === 'on' ? true : raw === 'off' ? false : fail('must be "on" or "off"')),
  },
  maxUploadBytes: {
    key: 'maxUploadBytes', env: 'MAX_UPLOAD_BYTES', flag: '--max-upload-bytes', description: 'largest file upload in bytes (default 1073741824)',
    parse: (raw) => (/^\d{1,15}$/.test(raw) && Number(raw) > 0 ? Number(raw) : fail('must be a positive integer number of bytes')),
  },
  pgPoolSize: {
    key: 'pgPoolSize', env: 'PG_POOL_SIZE', flag: '--pg-pool-size', description: 'PostgreSQL connections per node (default 10)',
    parse: (raw) => (/^\d{1,4}$/.test(raw) && Number(raw) >= 1 && Number(raw) <= 1000 ? Number(raw) : fail('must be an integer from 1 to 1000')),
  },
  pgStatementTimeoutMs: {
    key: 'pgStatementTimeoutMs', env: 'PG_STATEMENT_TIMEOUT_MS', flag: '--pg-statement-timeout-ms', description: 'PostgreSQL statement timeout in ms, 0 for none (default 10000)',
    parse: (raw) => (/^\d{1,9}$/.test(raw) ? Number(raw) : fail('must be a non-negative integer number of milliseconds')),
  },
  pgConnectTimeoutMs: {
    key: 'pgConnectTimeoutMs', env: 'PG_CONNECT_TIMEOUT_MS', flag: '--pg-connect-timeout-ms',
    description: 'ms to open a PostgreSQL connection or wait for a free pooled one before answering 503 (default 5000)',
    parse: (raw) => (/^\d{1,9}$/.test(raw) && Number(raw) >= 1 ? Number(raw) : fail('must be a positive integer number of milliseconds')),
  },
  pgQueryTimeoutMs: {
    key: 'pgQueryTimeoutMs', env: 'PG_QUERY_TIMEOUT_MS', flag: '--pg-query-timeout-ms',
    description: 'ms the client waits for a PostgreSQL answer before dropping the connection and answering 503; keep it above the statement timeout (default 15000)',
    parse: (raw) => (/^\d{1,9}$/.test(raw) && Number(raw) >= 1 ? Number(raw) : fail('must be a positive integer number of milliseconds')),
  },
  pgSsl: {
    key: 'pgSsl', env: 'PG_SSL', flag: '--pg-ssl', description: 'PostgreSQL TLS: off (default), on (verify the certificate) or no-verify',
    parse: (raw) => (raw === 'off' || raw === 'on' || raw === 'no-verify' ? raw : fail('must be off, on or no-verify')),
  },
  metricsToken: {
    key: 'metricsToken', env: 'METRICS_TOKEN', flag: '--metrics-token', description: 'enables GET /metrics for this Bearer token (default: no /metrics)',
    parse: (raw) => (raw.length >= 16 && raw.length <= 256 && !/\s/.test(raw) ? raw : fail('must be 16 to 256 characters without whitespace')),
  },
  corsOrigins: {
    key: 'corsOrigins', env: 'CORS_ORIGINS', flag: '--cors-origins', description: 'comma-separated origins (https://app.example.com) allowed to call the client API from a browser; default none',
    parse: (raw) => {
      const origins = raw.split(',').map((o) => o.trim()).filter(Boolean);
      if (origins.length === 0) return fail('must list at least one origin');
      for (const o of origins) {
        let ok = false;
        try {
          const u = new URL(o);
          ok = (u.protocol === 'https:' || u.protocol === 'http:') && u.origin === o;
        } catch {
          ok = false;
        }
        if (!ok) fail(`"${o}" is not an origin like https://app.example.com (scheme, host, optional port; no path)`);
      }
      return origins;
    },
  },
  sqliteSynchronous: {
    key: 'sqliteSynchronous', env: 'SQLITE_SYNCHRONOUS', flag: '--sqlite-synchronous',
    description: 'normal (default: commits survive a process crash) or full (also a power cut, slower writes)',
    parse: (raw) => (raw === 'normal' || raw === 'full' ? raw : fail('must be normal or full')),
  },
  requestTimeoutMs: {
    key: 'requestTimeoutMs', env: 'REQUEST_TIMEOUT_MS', flag: '--request-timeout-ms',
    description: 'ms for a whole request (headers and body) to arrive, else 408; an authenticated admin upload is cut only when no byte arrives for this long (default 30000)',
    parse: (raw) => milliseconds(raw),
  },
  headersTimeoutMs: {
    key: 'headersTimeoutMs', env: 'HEADERS_TIMEOUT_MS', flag: '--headers-timeout-ms',
    description: 'ms for the request headers to arrive, else 408; at most REQUEST_TIMEOUT_MS (default 10000)',
    parse: (raw) => milliseconds(raw),
  },
  keepAliveTimeoutMs: {
    key: 'keepAliveTimeoutMs', env: 'KEEP_ALIVE_TIMEOUT_MS', flag: '--keep-alive-timeout-ms',
    description: 'ms an idle keep-alive connection stays open; keep it above your load balancer’s idle timeout (default 72000)',
    parse: (raw) => milliseconds(raw),
  },
  databaseWaitMs: {
    key: 'databaseWaitMs', env: 'DATABASE_WAIT_MS', flag: '--database-wait-ms',
    description: 'how long the start retries a database that does not answer, in ms, 0 for no retry (default 30000)',
    parse: (raw) => (/^\d{1,9}$/.test(raw) ? Number(raw) : fail('must be a non-negative integer number of milliseconds')),
  },
  adminSessionIdleSeconds: {
    key: 'adminSessionIdleSeconds', env: 'ADMIN_SESSION_IDLE_SECONDS', flag: '--admin-session-idle-seconds',
    description: 'seconds a dashboard session may go unused before it ends (default 1800; sessions end 12 h after sign-in regardless)',
    parse: (raw) => (/^\d{1,5}$/.test(raw) && Number(raw) >= 1 && Number(raw) <= 43_200 ? Number(raw) : fail('must be an integer number of seconds from 1 to 43200')),
  },
  dashboardDir: {
    key: 'dashboardDir', env: 'DASHBOARD_DIR', flag: '--dashboard-dir', description: 'directory of the built dashboard (default: dashboard/dist of the installed package)',
    parse: (raw) => raw,
  },
  signingKeySeal: {
    key: 'signingKeySeal', env: 'SIGNING_KEY_SEAL', flag: '--signing-key-seal',
    description: 'key-encryption key sealing signing private keys in the database: base64 of 32 random bytes (default: unsealed, with a warning)',
    parse: kekValue,
  },
  signingKeySealFile: {
    key: 'signingKeySealFile', env: 'SIGNING_KEY_SEAL_FILE', flag: '--signing-key-seal-file',
    description: 'a file holding SIGNING_KEY_SEAL instead (read once at start)',
    parse: kekFile,
  },
  signingKeySealOld: {
    key: 'signingKeySealOld', env: 'SIGNING_KEY_SEAL_OLD', flag: '--signing-key-seal-old',
    description: 'the previous key-encryption key during a rotation: still opens keys, never seals (until `tollgate reseal-keys`)',
    parse: kekValue,
  },
  signingKeySealOldFile: {
    key: 'signingKeySealOldFile', env: 'SIGNING_KEY_SEAL_OLD_FILE', flag: '--signing-key-seal-old-file',
    description: 'a file holding SIGNING_KEY_SEAL_OLD instead',
    parse: kekFile,
  },
  downloadMinBytesPerSecond: {
    key: 'downloadMinBytesPerSecond', env: 'DOWNLOAD_MIN_BYTES_PER_SECOND', flag: '--download-min-bytes-per-second',
    description: 'a download whose reader takes less than this many bytes a second over DOWNLOAD_GRACE_MS is cut; 0 never cuts (default 4096)',
    parse: (raw) => (/^\d{1,9}$/.test(raw) ? Number(raw) : fail('must be a non-negative integer number of bytes a second')),
  },
  downloadGraceMs: {
    key: 'downloadGraceMs', env: 'DOWNLOAD_GRACE_MS', flag: '--download-grace-ms',
    description: 'ms a download reader is judged over, and given before the first judgement (default 30000)',
    parse: (raw) => milliseconds(raw),
  },
  webhookAllowHosts: {
    key: 'webhookAllowHosts', env: 'WEBHOOK_ALLOW_HOSTS', flag: '--webhook-allow-hosts',
    description: 'comma-separated host names, addresses or CIDR ranges webhooks may reach although private, and over plain http (development and tests only); default none',
    parse: (raw) => {
      const entries = raw.split(',').map((e) => e.trim()).filter(Boolean);
      if (entries.length === 0) return fail('must list at least one host, address or range');
      for (const e of entries) if (parseIpRange(e) === null && !/^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/i.test(e)) fail(`"${e}" is not a host name, an address or a CIDR range`);
      return entries;
    },
  },
  webhookTimeoutMs: {
    key: 'webhookTimeoutMs', env: 'WEBHOOK_TIMEOUT_MS', flag: '--webhook-timeout-ms',
    description: 'ms one webhook attempt may take, answer included (default 15000)',
    parse: (raw) => milliseconds(raw),
  },
  eventRetentionDays: {
    key: 'eventRetentionDays', env: 'EVENT_RETENTION_DAYS', flag: '--event-retention-days',
    description: 'days events and their webhook deliveries are kept (default 30)',
    parse: (raw) => (/^\d{1,4}$/.test(raw) && Number(raw) >= 1 && Number(raw) <= 3650 ? Number(raw) : fail('must be a whole number of days from 1 to 3650')),
  },
  integrationEventRetentionDays: {
    key: 'integrationEventRetentionDays', env: 'INTEGRATION_EVENT_RETENTION_DAYS', flag: '--integration-event-retention-days',
    description: 'days the ids of received store events are kept, so a redelivery is answered duplicate (default 90; at least 7: the stores retry for 3 days)',
    // A redelivery after its id is forgotten is harmless (a renewal is kept per bill, docs/integrations.md); 7 keeps the stores' retries `duplicate`.
    parse: (raw) => (/^\d{1,4}$/.test(raw) && Number(raw) >= 7 && Number(raw) <= 3650 ? Number(raw) : fail('must be a whole number of days from 7 to 3650')),
  },
};

export const DEFAULTS: Config = {
  port: 8080,
  host: '127.0.0.1',
  databaseUrl: 'sqlite:./data/tollgate.db',
  adminToken: null,
  trustProxy: null,
  logLevel: 'info',
  accessLog: true,
  logFormat: 'json',
  redisUrl: null,
  redisTimeoutMs: 50,
  rateLimit: true,
  maxUploadBytes: 1024 ** 3,
  pgPoolSize: 10,
  pgStatementTimeoutMs: 10_000,
  pgConnectTimeoutMs: 5_000,
  pgQueryTimeoutMs: 15_000,
  pgSsl: 'off',
  metricsToken: null,
  corsOrigins: null,
  sqliteSynchronous: 'normal',
  requestTimeoutMs: 30_000,
  headersTimeoutMs: 10_000,
  keepAliveTimeoutMs: 72_000,
  databaseWaitMs: 30_000,
  adminSessionIdleSeconds: 1800,
  dashboardDir: null,
  signingKeySeal: null,
  signingKeySealFile: null,
  signingKeySealOld: null,
  signingKeySealOldFile: null,
  downloadMinBytesPerSecond: 4096,
  downloadGraceMs: 30_000,
  webhookAllowHosts: null,
  webhookTimeoutMs: 15_000,
  eventRetentionDays: 30,
  integrationEventRetentionDays: 90,
};

/**
 * Reads the environment, then flags (which win). Throws ConfigError naming the
 * first bad setting; the caller prints that one line and exits.
 */
export function loadConfig(env: NodeJS.ProcessEnv, flags: Partial<Record<keyof Config, string>> = {}): Readonly<Config> {
  const config: Config = { ...DEFAULTS };
  for (const setting of Object.values(SETTINGS) as Setting<keyof Config>[]) {
    const fromFlag = flags[setting.key];
    const raw = fromFlag ?? env[setting.env];
    if (raw === undefined || (fromFlag === undefined && raw === '')) continue;
    try {
      (config as unknown as Record<string, unknown>)[setting.key] = setting.parse(raw);
    } catch (err) {
      const name = fromFlag !== undefined ? setting.flag : setting.env;
      throw new ConfigError(name, (err as Error).message);
    }
  }
  checkSeal(config);
  return Object.freeze(config);
}

/** The sealing keys together: one source each, no old key without a new one, and not the same key twice. */
function checkSeal(c: Config): void {
  if (c.signingKeySeal && c.signingKeySealFile) throw new ConfigError('SIGNING_KEY_SEAL_FILE', 'give the sealing key in SIGNING_KEY_SEAL or SIGNING_KEY_SEAL_FILE, not both');
  if (c.signingKeySealOld && c.signingKeySealOldFile) throw new ConfigError('SIGNING_KEY_SEAL_OLD_FILE', 'give the old sealing key in SIGNING_KEY_SEAL_OLD or SIGNING_KEY_SEAL_OLD_FILE, not both');
  const { current, old } = sealKeys(c);
  const oldName = c.signingKeySealOld ? 'SIGNING_KEY_SEAL_OLD' : 'SIGNING_KEY_SEAL_OLD_FILE';
  if (old && !current) throw new ConfigError(oldName, 'is only read during a rotation: set the new key in SIGNING_KEY_SEAL (or SIGNING_KEY_SEAL_FILE) too');
  if (old && current && old.equals(current)) throw new ConfigError(oldName, 'is the same key as SIGNING_KEY_SEAL: a rotation needs a new key');
}

/** The sealing keys a configuration gives: the one that seals, and the one a rotation still opens with. */
export function sealKeys(c: Readonly<Config>): { current: Buffer | null; old: Buffer | null } {
  return { current: c.signingKeySeal ?? c.signingKeySealFile, old: c.signingKeySealOld ?? c.signingKeySealOldFile };
}
