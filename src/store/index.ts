import type { Db, Dialect, Queryable } from './db.js';
import { adminRepository } from './repositories/admin.js';
import { appsRepository } from './repositories/apps.js';
import { bansRepository } from './repositories/bans.js';
import { devicesRepository } from './repositories/devices.js';
import { eventsRepository } from './repositories/events.js';
import { filesRepository } from './repositories/files.js';
import { leasesRepository } from './repositories/leases.js';
import { licensesRepository } from './repositories/licenses.js';
import { operatorsRepository } from './repositories/operators.js';
import { salesRepository } from './repositories/sales.js';
import { sessionsRepository } from './repositories/sessions.js';
import { signingKeysRepository } from './repositories/signing-keys.js';
import { statsRepository } from './repositories/stats.js';
import { usersRepository } from './repositories/users.js';
import { variablesRepository } from './repositories/variables.js';
import { webhooksRepository } from './repositories/webhooks.js';

/** `dialect`: the few repositories whose SQL differs by store (the licenses' any-case filters, src/store/fold.ts; the bans' creation lock; the operator's row lock for a token's mint). */
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
    sales: salesRepository(q),
    events: eventsRepository(q),
    webhooks: webhooksRepository(q, dialect),
  };
}

export type Repositories = ReturnType<typeof repositories>;

/** The store the domain sees: repositories, plus transactions that hand out repositories bound to them. */
export interface Store extends Repositories {
  readonly db: Db;
  transaction<T>(fn: (tx: Repositories) => Promise<T>): Promise<T>;
}

export function createStore(db: Db): Store {
  return {
    db,
    ...repositories(db, db.dialect),
    transaction: (fn) => db.transaction((tx) => fn(repositories(tx, db.dialect))),
  };
}
