import type { Command } from 'commander';
import { configOrExit, dbTarget, exit, failureLine, guardStart, StartError } from './start.js';

/**
 * `tollgate reseal-keys`: every stored signing private key sealed under
 * SIGNING_KEY_SEAL, from plain PKCS#8 or from SIGNING_KEY_SEAL_OLD (the
 * second step of a rotation, docs/deploy.md "Sealing the signing keys").
 * On the database itself, like `migrate`: the nodes keep serving meanwhile
 * (the key material does not change, only its wrapping).
 */
export function resealCommand(program: Command): void {
  program
    .command('reseal-keys')
    .description('Seal every signing private key under SIGNING_KEY_SEAL (after setting it, or to finish a rotation from SIGNING_KEY_SEAL_OLD)')
    .option('--database-url <url>', 'sqlite:<path> or postgres://… [env DATABASE_URL]')
    .action(async (options: { databaseUrl?: string }) => {
      const config = configOrExit(options.databaseUrl ? { databaseUrl: options.databaseUrl } : {});
      const target = dbTarget(config.databaseUrl, true);
      guardStart(target, config.logLevel);
      try {
        const [{ openDb }, { createStore }, { resealKeys }, { sealOf }] = await Promise.all([
          import('../store/open.js'),
          import('../store/index.js'),
          import('../domain/signing/reseal.js'),
          import('../wiring.js'),
        ]);
        const seal = sealOf(config);
        if (seal.current === null) throw new StartError('SIGNING_KEY_SEAL (or SIGNING_KEY_SEAL_FILE) is not set: there is no key to seal with', 2);
        const db = await openDb(config.databaseUrl, { ...config, mustExist: true });
        try {
          const { resealed, unopenable } = await resealKeys(createStore(db), seal);
          // Stores' webhook signing secrets are sealed with the same KEK (kid integration:<provider>): counted apart.
          const secrets = resealed.filter((kid) => kid.startsWith('integration:')).length;
          const keys = resealed.length - secrets;
          const also = secrets > 0 ? ` and ${secrets} store signing secret${secrets === 1 ? '' : 's'}` : '';
          process.stdout.write(`resealed ${keys} signing key${keys === 1 ? '' : 's'}${also} under key-encryption key ${seal.current.id} in ${target.location}\n`);
          if (unopenable.length > 0) {
            const n = unopenable.length;
            throw new StartError(`${n} signing key${n === 1 ? '' : 's'} could not be opened and stay${n === 1 ? 's' : ''} as before (${unopenable[0]!.reason}${n > 1 ? '; and others' : ''}): set SIGNING_KEY_SEAL_OLD to the key that sealed ${n === 1 ? 'it' : 'them'} and run again`);
          }
        } finally {
          await db.close();
        }
      } catch (err) {
        exit(failureLine(err, target), err instanceof StartError ? err.exitCode : 1, err, config.logLevel);
      }
    });
}
