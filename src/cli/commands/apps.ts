import type { Command } from 'commander';
import { CliError } from '../api.js';
import { int, remote } from '../context.js';
import { fetchList, listOptions, tellMore } from '../lists.js';
import { printDone, printObject, printRows, shownOnce } from '../output.js';

const COLUMNS = ['id', 'name', 'api_key', 'device_auth_enabled', 'anonymous_access_allowed', 'max_devices_per_user', 'registration_open'];
/** What stays on a narrow terminal: which app, and the key its clients use. */
const PRIORITY = ['name', 'id', 'api_key', 'registration_open'];

function settingOptions(cmd: Command): Command {
  return cmd
    .option('--device-auth <on|off>', 'device (hardware ID) authentication')
    .option('--anonymous <on|off>', 'allow /app_context and downloads without a user')
    .option('--max-devices <n>', 'devices per user', int)
    .option('--session-ttl <seconds>', 'session lifetime in seconds', int)
    .option('--password-min <n>', 'minimum password length on sign-up', int)
    .option('--registration <open|closed>', 'whether sign-ups are accepted')
    .option('--signatures <optional|required>', 'signed answers: required refuses requests without Tollgate-Nonce (needs an active signing key: tollgate keys init)')
    .option('--offline-grace-seconds <seconds>', 'how long an offline lease lasts (0: no leases)', int)
    .option('--lease-renew-seconds <seconds>', 'when a lease asks the app to go online and renew it (at most the offline grace)', int)
    .option('--max-seats <n|off>', 'floating seats: devices of one user running at once (off: no seats)', intOrOff)
    .option('--heartbeat-seconds <seconds>', 'a seat must be renewed within this many seconds (plus the grace)', int)
    .option('--seat-grace-seconds <seconds>', 'how late a seat heartbeat may be before the seat is dead', int)
    .option('--device-reset-cooldown-seconds <seconds>', 'users may reset their own devices once per this many seconds (0: off)', int)
    .option('--device-resets-per-year <n|off>', 'at most this many self-resets per user in any 365 days (off: no cap)', intOrOff);
}

/** A number, or `off` for a setting that may be unset (sent as null; commander itself would turn a null into ''). */
function intOrOff(value: string): number | 'off' {
  return value === 'off' ? 'off' : int(value);
}

const nullIfOff = (value: unknown): unknown => (value === 'off' ? null : value);

function signatures(value: unknown): string | undefined {
  if (value === undefined || value === 'optional' || value === 'required') return value;
  throw new CliError('--signatures must be optional or required');
}

function onOff(value: unknown, name: string): boolean | undefined {
  if (value === undefined) return undefined;
  if (value === 'on' || value === 'open' || value === 'true') return true;
  if (value === 'off' || value === 'closed' || value === 'false') return false;
  throw new CliError(`${name} must be on or off`);
}

function settings(opts: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {
    device_auth_enabled: onOff(opts.deviceAuth, '--device-auth'),
    anonymous_access_allowed: onOff(opts.anonymous, '--anonymous'),
    max_devices_per_user: opts.maxDevices,
    session_ttl_seconds: opts.sessionTtl,
    password_min_length: opts.passwordMin,
    registration_open: onOff(opts.registration, '--registration'),
    signatures: signatures(opts.signatures),
    offline_grace_seconds: opts.offlineGraceSeconds,
    lease_renew_seconds: opts.leaseRenewSeconds,
    max_seats: nullIfOff(opts.maxSeats),
    heartbeat_seconds: opts.heartbeatSeconds,
    seat_grace_seconds: opts.seatGraceSeconds,
    device_reset_cooldown_seconds: opts.deviceResetCooldownSeconds,
    device_resets_per_year: nullIfOff(opts.deviceResetsPerYear),
  };
  for (const key of Object.keys(out)) if (out[key] === undefined) delete out[key];
  return out;
}

export function appsCommand(program: Command): void {
  const apps = program.command('apps').description('Applications: create, list, change settings, rotate secrets, delete');

  listOptions(apps.command('list').description('List applications')).action(
    remote(async ({ api, out, opts }) => {
      const listed = await fetchList<Record<string, unknown>>(api, 'admin/v1/apps', opts, 'applications');
      printRows(listed.items, COLUMNS, out, listed.items, PRIORITY);
      tellMore(listed);
    }),
  );

  settingOptions(apps.command('create').description('Create an application (prints its API key and, once, its secret)').argument('<name>')).action(
    remote(async ({ api, out, opts }, name) => {
      const app = await api.json<Record<string, unknown>>('POST', 'admin/v1/apps', { name, ...settings(opts) });
      printObject(app, out);
      shownOnce('The API secret is shown only once: store it in your application’s build secrets.', out);
    }),
  );

  apps.command('get').description('Show an application').argument('<app_id>').action(
    remote(async ({ api, out }, id) => printObject(await api.json('GET', `admin/v1/apps/${id}`), out)),
  );

  settingOptions(apps.command('update').description('Change an application’s name or settings').argument('<app_id>').option('--name <name>', 'new application name')).action(
    remote(async ({ api, out, opts }, id) => {
      const body = { ...settings(opts), ...(opts.name !== undefined && { name: opts.name }) };
      printObject(await api.json('PATCH', `admin/v1/apps/${id}`, body), out);
    }),
  );

  apps.command('rotate-secret').description('Issue a new API secret; the old one stops working at once').argument('<app_id>').action(
    remote(async ({ api, out }, id) => {
      printObject(await api.json('POST', `admin/v1/apps/${id}/secret`), out);
      shownOnce('The new API secret is shown only once; the old one no longer works.', out);
    }),
  );

  apps
    .command('delete')
    .description('Delete an application and everything it owns')
    .argument('<app_id>')
    .requiredOption('--confirm <name>', 'the application’s name, to confirm')
    .action(
      remote(async ({ api, out, opts }, id) => {
        await api.json('DELETE', `admin/v1/apps/${id}?confirm=${encodeURIComponent(String(opts.confirm))}`);
        printDone(`deleted application ${id}`, out);
      }),
    );
}
