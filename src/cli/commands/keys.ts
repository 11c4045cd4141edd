/**
 * `tollgate keys`: the root key is made and used HERE, on the operator's
 * machine, and only its public half is ever sent. The server makes the signing
 * keys; this command certifies them with the root, locally (docs/signing.md).
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { InvalidArgumentError, type Command } from 'commander';
import type { KeyView } from '../../domain/admin/keys.js';
import { b64url, certificateInput, decodeCertificate, encodeCertificate, MAX_CERT_VALIDITY_MS } from '../../domain/signing/format.js';
import { ApiClient, CliError } from '../api.js';
import { positiveInt, remote, requireApp, type CliContext } from '../context.js';
import { fetchList, listOptions, tellMore } from '../lists.js';
import { printObject, printRows } from '../output.js';

const DAY_MS = 24 * 3600 * 1000;
const CLOCK_SKEW_MS = 60_000;
const MAX_DAYS = MAX_CERT_VALIDITY_MS / DAY_MS;
const COLUMNS = ['kid', 'status', 'not_before', 'not_after', 'created_at', 'retired_at'];

const days = (value: string): number => {
  const n = positiveInt(value);
  if (n > MAX_DAYS) throw new InvalidArgumentError(`must be at most ${MAX_DAYS} (a certificate is valid for 90 days at most)`);
  return n;
};

const appPath = (app: string) => `admin/v1/apps/${encodeURIComponent(app)}`;

/** Creates a signing key on the server and certifies it with the root, valid from now for `validDays`. */
async function newCertifiedKey(api: ApiClient, app: string, root: KeyObject, validDays: number): Promise<KeyView> {
  const key = await api.json<KeyView>('POST', `${appPath(app)}/signing-keys`);
  // A minute back: a server clock a little behind this machine's still finds the new key valid at once.
  const notBefore = Date.now() - CLOCK_SKEW_MS;
  const fields = { app_id: app, kid: key.kid, public_key: key.public_key, not_before: notBefore, not_after: notBefore + validDays * DAY_MS };
  const certificate = encodeCertificate({ v: 1, ...fields, sig: b64url(sign(null, certificateInput(fields), root)) });
  return api.json<KeyView>('PUT', `${appPath(app)}/signing-keys/${encodeURIComponent(key.kid)}/certificate`, { certificate });
}

const publicOf = (key: KeyObject): string => createPublicKey(key).export({ format: 'jwk' }).x!;

function readRoot(file: string): KeyObject {
  let key: KeyObject;
  try {
    key = createPrivateKey(readFileSync(file));
  } catch (err) {
    throw new CliError(`cannot read the root key from ${file}: ${(err as NodeJS.ErrnoException).code ?? 'not a PEM private key'}`);
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new CliError(`${file} is not an Ed25519 private key`);
  return key;
}

async function init(ctx: CliContext): Promise<void> {
  const app = requireApp(ctx);
  const validDays = (ctx.opts.days as number | undefined) ?? MAX_DAYS;
  const file = resolve(String(ctx.opts.out ?? `tollgate-root-${app}.pem`));
  // Refused before anything is made: an existing file may be the only copy of a root key.
  if (existsSync(file)) throw new CliError(`${file} already exists: refusing to overwrite it (it may hold a root key); pass another --out`);
  await ctx.api.json('GET', appPath(app)); // the app exists and the token works, before a key is made for it
  const { privateKey } = generateKeyPairSync('ed25519');
  const publicKey = publicOf(privateKey);
  // Written before the server learns the public half, so a root the server pins always has its private file.
  // `wx`: created exclusively (no race with another writer); 0600: readable by the operator alone.
  try {
    writeFileSync(file, privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600, flag: 'wx' });
  } catch (err) {
    throw new CliError(`cannot write ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  try {
    await ctx.api.json('PUT', `${appPath(app)}/root-key`, { public_key: publicKey, ...(ctx.opts.replace === true && { replace: true }) });
  } catch (err) {
    // The server answered no: this root is pinned nowhere and would only mislead; an unreachable server keeps the file.
    if (err instanceof CliError && err.status !== undefined) rmSync(file, { force: true });
    throw err;
  }
  const key = await newCertifiedKey(ctx.api, app, privateKey, validDays);
  if (ctx.out.json) {
    printObject({ app_id: app, root_public_key: publicKey, root_key_file: file, signing_key: key }, ctx.out);
    return;
  }
  process.stdout.write(
    [
      `Root public key of application ${app} (embed it in your client with the app id):`,
      '',
      `  ${publicKey}`,
      '',
      `Private root key written to ${file} (mode 0600).`,
      'Keep it offline (not on this server, not in the repository): it certifies every signing key, and whoever holds it can impersonate this server.',
      `You need it every ${validDays} days or sooner for: tollgate keys rotate --app ${app} --root-key ${file}`,
      '',
      `Signing key ${key.kid} is active until ${key.not_after}.`,
      '',
    ].join('\n'),
  );
}

async function rotate(ctx: CliContext): Promise<void> {
  const app = requireApp(ctx);
  const root = readRoot(String(ctx.opts.rootKey));
  const pinned = await ctx.api.json<{ public_key: string }>('GET', `${appPath(app)}/root-key`);
  // Checked here, not by the server's 422: a wrong file would leave a pending key behind for nothing.
  if (pinned.public_key !== publicOf(root)) throw new CliError(`${String(ctx.opts.rootKey)} is not the root key of application ${app}`);
  const key = await newCertifiedKey(ctx.api, app, root, (ctx.opts.days as number | undefined) ?? MAX_DAYS);
  if (ctx.out.json) printObject(key as unknown as Record<string, unknown>, ctx.out);
  else process.stdout.write(`Signing key ${key.kid} is active from ${key.not_before} until ${key.not_after}; older keys stay valid until their own end.\n`);
}

export function keysCommand(program: Command): void {
  const keys = program.command('keys').description('Signing keys: the offline root key, rotation, certificates, retirement (docs/signing.md)');

  keys.command('init').description('Make the root key locally, upload its public half, and certify a first signing key')
    .option('--out <file>', 'where to write the private root key (default ./tollgate-root-<app_id>.pem)')
    .option('--days <n>', `validity of the first signing key in days (at most ${MAX_DAYS})`, days)
    .option('--replace', 'replace an existing root key: every key it certified is retired and clients must pin the new root')
    .action(remote(init));

  keys.command('rotate').description('Create the next signing key and certify it with the root key')
    .requiredOption('--root-key <file>', 'the private root key written by keys init')
    .option('--days <n>', `validity in days (at most ${MAX_DAYS})`, days)
    .action(remote(rotate));

  listOptions(keys.command('list').description('List signing keys')).action(
    remote(async (ctx) => {
      const listed = await fetchList<Record<string, unknown>>(ctx.api, `${appPath(requireApp(ctx))}/signing-keys`, ctx.opts, 'keys');
      printRows(listed.items, COLUMNS, ctx.out);
      tellMore(listed);
    }),
  );

  keys.command('show').description('Show a signing key and its decoded certificate').argument('<kid>').action(
    remote(async (ctx, kid) => {
      const key = await ctx.api.json<KeyView>('GET', `${appPath(requireApp(ctx))}/signing-keys/${encodeURIComponent(kid!)}`);
      const decoded = key.certificate === null ? null : decodeCertificate(key.certificate);
      printObject({ ...key, decoded_certificate: decoded && { ...decoded, not_before: iso(decoded.not_before), not_after: iso(decoded.not_after) } }, ctx.out);
    }),
  );

  keys.command('retire').description('Retire a signing key: the server deletes its private key and never signs with it again').argument('<kid>').action(
    remote(async (ctx, kid) => {
      const key = await ctx.api.json<KeyView>('POST', `${appPath(requireApp(ctx))}/signing-keys/${encodeURIComponent(kid!)}/retire`);
      if (ctx.out.json) printObject(key as unknown as Record<string, unknown>, ctx.out);
      else process.stdout.write(`retired signing key ${key.kid}\n`);
    }),
  );
}

const iso = (ms: number): string => (Number.isFinite(new Date(ms).getTime()) ? new Date(ms).toISOString() : String(ms));
