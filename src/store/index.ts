import type { Db, Dialect, Queryable, TransactionOptions } from './db.js';
import { adminRepository } from './repositories/admin.js';
import { appsRepository } from './repositories/apps.js';
import { bansRepository } from './repositories/bans.js';
import { devicesRepository } from './repositories/devices.js';
import { entitlementsRepository } from './repositories/entitlements.js';
import { eventsRepository } from './repositories/events.js';
import { filesRepository } from './repositories/files.js';
import { leasesRepository } from './repositories/leases.js';
import { licensesRepository } from './repositories/licenses.js';
import { operatorsRepository } from './repositories/operators.js';
import { seatsRepository } from './repositories/seats.js';
import { salesRepository } from './repositories/sales.js';
import { sessionsRepository } from './repositories/sessions.js';
import { signingKeysRepository } from './repositories/signing-keys.js';
import { statsRepository } from './repositories/stats.js';
import { templatesRepository } from './repositories/templates.js';
import { trialsRepository } from './repositories/trials.js';
import { usersRepository } from './repositories/users.js';
import { variablesRepository } from './repositories/variables.js';
import { webhooksRepository } from './repositories/webhooks.js';

/** `dialect`: the few repositories whose SQL differs by store (the licenses' any-case filters, src/store/fold.ts; the bans' creation lock; the operator's row lock for a token's mint; a template's lock against a mapping naming it). */
export function repositories(q: Queryable, dialect: Dialect) {
  return {
    apps: appsRepository(q),
    admin: adminRepository(q, dialect),
    users: usersRepository(q),
    licenses: licensesRepository(q, dialect),
    devices: devicesRepository(q),
    sessions: sessionsRepository(q),
    variables: variablesRepository(q),
    files: filesRepository(q),
    bans: bansRepository(q, dialect),
    signingKeys: signingKeysRepository(q),
    leases: leasesRepository(q),
    operators: operatorsRepository(q, dialect),
    stats: statsRepository(q),
    templates: templatesRepository(q, dialect),
    entitlements: entitlementsRepository(q),
    trials: trialsRepository(q),
    sales: salesRepository(q),
    events: eventsRepository(q),
    webhooks: webhooksRepository(q, dialect),
    seats: seatsRepository(q, dialect),
  };
}

export type Repositories = ReturnType<typeof repositories>;

/** The store itself: repositories, plus transactions that hand out repositories bound to them. */
export interface Store extends Repositories {
  readonly db: Db;
  /** The uploads' content, written outside transactions (see ReadStore). */
  readonly blobs: Pick<Repositories['files'], 'createBlob' | 'appendChunk' | 'deleteBlob'>;
  /** `options.oneStatement`: see Db.transaction. */
  transaction<T>(fn: (tx: Repositories) => Promise<T>, options?: TransactionOptions): Promise<T>;
}

/**
 * The methods of each repository that only read. Everything else (inserts, updates, deletes, and the row locks,
 * which mean something only inside a transaction) is handed out by the unit of work alone (domain/unit-of-work.ts).
 * A method missing from both sides of this list is a read nobody can call outside a transaction: add it here.
 */
const READS = {
  apps: ['findById', 'findByKey', 'list'],
  admin: ['findLiveToken', 'revokedTokenId', 'findToken', 'listTokens', 'countTokens', 'liveTokensOf', 'listAudit', 'countAudit'],
  users: ['findById', 'findByUsernameKey', 'existsByUsernameKey', 'findBySignupLicense', 'list', 'count', 'ips'],
  licenses: ['findByCode', 'findById', 'list', 'count', 'activationsOf', 'holdingEnd'],
  devices: ['find', 'listFor'],
  sessions: ['findByHash', 'listLive'],
  variables: ['get', 'list'],
  files: ['chunk', 'findById', 'list'],
  bans: ['findActive', 'active', 'list', 'count', 'findById'],
  signingKeys: ['find', 'all', 'list', 'hasUsable', 'privateKeys'],
  leases: ['seqOf'],
  operators: ['findByUsernameKey', 'findById', 'list', 'countActiveOwners', 'findSession'],
  stats: ['activity', 'topBanHits', 'activeMemberships'],
  events: ['list', 'expiredBetween'],
  templates: ['findById', 'findByName', 'list'],
  entitlements: ['grantsOf', 'listFor'],
  trials: ['findByHwid', 'existsByEmail', 'findById', 'list', 'count', 'startedPerBucket'],
  sales: ['findIntegration', 'integrations', 'findMapping', 'mappings', 'findEvent', 'findOrderByRef', 'findOrderByPayment', 'findOrderBySubscription', 'findOrder', 'listOrders', 'orderLicenses', 'storedSecrets'],
  webhooks: ['findEndpoint', 'listEndpoints', 'anyDue', 'findDelivery', 'listDeliveries', 'attemptsOf', 'queue', 'findKey'],
  seats: ['findLive', 'countLive', 'liveOfUser', 'liveOfApp', 'lastSelfReset', 'selfResetsSince', 'selfResetStats'],
} as const satisfies { [R in keyof Repositories]: readonly (keyof Repositories[R])[] };

/** What the domain reads through outside a write: each repository's reading methods, nothing that changes a row. */
export type ReadRepositories = { readonly [R in keyof Repositories]: Pick<Repositories[R], Extract<(typeof READS)[R][number], keyof Repositories[R]>> };

/**
 * The store as the domain holds it (`Services.store`): reads, the database handle (health, tests), and one
 * documented exception: the content of uploads (`blobs`). A file's content is streamed into blob chunks before
 * the unit of work that inserts or repoints its file row, so a large upload does not hold a transaction open for
 * as long as the client takes to send it. A blob no file row references is invisible to every reader and removed
 * by the sweeper (domain/files.ts, `sweepOrphanBlobs`) once older than a grace period.
 */
export interface ReadStore extends ReadRepositories {
  readonly db: Db;
  readonly blobs: Pick<Repositories['files'], 'createBlob' | 'appendChunk' | 'deleteBlob'>;
}

export function createStore(db: Db): Store {
  const repos = repositories(db, db.dialect);
  return {
    db,
    ...repos,
    blobs: repos.files,
    transaction: (fn, options) => db.transaction((tx) => fn(repositories(tx, db.dialect)), options),
  };
}
