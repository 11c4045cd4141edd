import type { Command } from 'commander';
import { CliError } from '../api.js';
import { remote } from '../context.js';
import { fetchList, listOptions, tellMore } from '../lists.js';
import { printDone, printObject, printRows, shownOnce } from '../output.js';

const COLUMNS = ['id', 'url', 'kind', 'event_types', 'enabled', 'disabled_reason', 'description'];
const PRIORITY = ['id', 'url', 'enabled'];
const DELIVERY_COLUMNS = ['id', 'event_type', 'status', 'attempts', 'last_status', 'next_attempt_at', 'created_at'];
const EVENT_COLUMNS = ['id', 'type', 'occurred_at', 'app_id'];

/** --app <id>: an app's endpoints; without it, the service-wide ones. */
const base = (opts: Record<string, unknown>): string => (opts.app ? `admin/v1/apps/${String(opts.app)}/webhooks` : 'admin/v1/webhooks');
const withApp = (cmd: Command): Command => cmd.option('--app <app_id>', 'the app’s endpoints (default: the service-wide ones, which get every app’s events)');

function types(raw: unknown): string[] | undefined {
  if (raw === undefined) return undefined;
  const list = String(raw).split(',').map((t) => t.trim()).filter(Boolean);
  if (list.length === 0) throw new CliError('--events must list at least one event type (docs/webhooks.md)');
  return list;
}

export function webhooksCommand(program: Command): void {
  const hooks = program.command('webhooks').description('Webhook endpoints, their deliveries, and the event outbox (docs/webhooks.md)');

  listOptions(withApp(hooks.command('list').description('List webhook endpoints'))).action(
    remote(async ({ api, out, opts }) => {
      const listed = await fetchList<Record<string, unknown>>(api, base(opts), opts, 'endpoints');
      printRows(listed.items, COLUMNS, out, listed.items, PRIORITY);
      tellMore(listed);
    }),
  );

  withApp(hooks.command('create').description('Add an endpoint (prints its secret, once)').argument('<url>'))
    .option('--events <types>', 'comma-separated event types to send (default: every type)')
    .option('--kind <standard|discord>', 'standard (Standard Webhooks JSON, the default) or discord (embeds)')
    .option('--description <text>', 'what it is for')
    .option('--disabled', 'create it disabled')
    .action(
      remote(async ({ api, out, opts }, url) => {
        const body = {
          url, ...(opts.events !== undefined && { event_types: types(opts.events) }), ...(opts.kind !== undefined && { kind: opts.kind }),
          ...(opts.description !== undefined && { description: opts.description }), ...(opts.disabled === true && { enabled: false }),
        };
        printObject(await api.json('POST', base(opts), body), out);
        shownOnce('The secret (whsec_…) is shown only once: give it to the receiver, which verifies each delivery with it.', out);
      }),
    );

  withApp(hooks.command('get').description('Show an endpoint').argument('<endpoint_id>')).action(
    remote(async ({ api, out, opts }, id) => printObject(await api.json('GET', `${base(opts)}/${id}`), out)),
  );

  withApp(hooks.command('update').description('Change an endpoint').argument('<endpoint_id>'))
    // Not --url: that is the global option naming the Tollgate server, which the action's options include.
    .option('--new-url <url>', 'a new URL for the endpoint (checked as at creation; a Discord URL as listed, its token masked, keeps the stored one)')
    .option('--events <types>', 'comma-separated event types to send')
    .option('--all-events', 'send every event type')
    .option('--description <text>', 'what it is for')
    .option('--enable', 'enable it (also after the service disabled it)')
    .option('--disable', 'stop sending to it')
    .action(
      remote(async ({ api, out, opts }, id) => {
        if (opts.enable && opts.disable) throw new CliError('--enable and --disable contradict each other');
        if (opts.events !== undefined && opts.allEvents) throw new CliError('--events and --all-events contradict each other');
        const body = {
          ...(opts.newUrl !== undefined && { url: opts.newUrl }), ...(opts.events !== undefined && { event_types: types(opts.events) }),
          ...(opts.allEvents === true && { event_types: null }), ...(opts.description !== undefined && { description: opts.description }),
          ...(opts.enable === true && { enabled: true }), ...(opts.disable === true && { enabled: false }),
        };
        if (Object.keys(body).length === 0) throw new CliError('nothing to change: give --new-url, --events, --all-events, --description, --enable or --disable');
        printObject(await api.json('PATCH', `${base(opts)}/${id}`, body), out);
      }),
    );

  withApp(hooks.command('delete').description('Delete an endpoint and its deliveries').argument('<endpoint_id>')).action(
    remote(async ({ api, out, opts }, id) => {
      await api.json('DELETE', `${base(opts)}/${id}`);
      printDone(`deleted webhook endpoint ${id}`, out);
    }),
  );

  withApp(hooks.command('rotate-secret').description('Issue a new secret (printed once); the old one keeps signing beside it for 24 hours').argument('<endpoint_id>')).action(
    remote(async ({ api, out, opts }, id) => {
      printObject(await api.json('POST', `${base(opts)}/${id}/secret`), out);
      shownOnce('The new secret is shown only once; the old one signs beside it until previous_secret_until.', out);
    }),
  );

  withApp(hooks.command('test').description('Send a webhook.test event to this endpoint').argument('<endpoint_id>')).action(
    remote(async ({ api, out, opts }, id) => printObject(await api.json('POST', `${base(opts)}/${id}/test`), out)),
  );

  listOptions(withApp(hooks.command('deliveries').description('Deliveries to an endpoint, newest first (--json shows every attempt and answer)').argument('<endpoint_id>')))
    .option('--status <pending|delivered|failed>', 'only deliveries in this state')
    .action(
      remote(async ({ api, out, opts }, id) => {
        const path = `${base(opts)}/${id}/deliveries${opts.status ? `?status=${encodeURIComponent(String(opts.status))}` : ''}`;
        const listed = await fetchList<Record<string, unknown>>(api, path, opts, 'deliveries');
        printRows(listed.items, DELIVERY_COLUMNS, out, listed.items);
        tellMore(listed);
      }),
    );

  withApp(hooks.command('replay').description('Send again one delivery (--delivery) or every failed one since a time (--since)').argument('<endpoint_id>'))
    .option('--delivery <delivery_id>', 'the delivery to send again')
    .option('--since <time>', 'ISO 8601: every failed delivery created since then')
    .action(
      remote(async ({ api, out, opts }, id) => {
        if ((opts.delivery === undefined) === (opts.since === undefined)) throw new CliError('give exactly one of --delivery and --since');
        if (opts.delivery !== undefined) {
          await api.json('POST', `${base(opts)}/${id}/deliveries/${String(opts.delivery)}/replay`);
          printDone(`delivery ${String(opts.delivery)} queued again`, out);
        } else {
          const r = await api.json<{ replayed: number }>('POST', `${base(opts)}/${id}/replay`, { since: opts.since });
          printDone(`${r.replayed} failed deliveries queued again`, out, r);
        }
      }),
    );

  withApp(hooks.command('key').description('The public half (whpk_…) of the Ed25519 key that signs the v1a signatures')).action(
    remote(async ({ api, out, opts }) => printObject(await api.json('GET', opts.app ? `admin/v1/apps/${String(opts.app)}/webhook-key` : 'admin/v1/webhook-key'), out)),
  );

  listOptions(hooks.command('events').description('The event outbox, newest first'))
    .option('--app <app_id>', 'only this app’s events')
    .option('--type <types>', 'comma-separated event types')
    .option('--from <time>', 'ISO 8601, inclusive')
    .option('--to <time>', 'ISO 8601, exclusive')
    .action(
      remote(async ({ api, out, opts }) => {
        const q = new URLSearchParams();
        for (const [k, v] of [['app_id', opts.app], ['type', opts.type], ['from', opts.from], ['to', opts.to]] as const) if (v !== undefined) q.set(k, String(v));
        const listed = await fetchList<Record<string, unknown>>(api, `admin/v1/events${q.size ? `?${q}` : ''}`, opts, 'events');
        printRows(listed.items, EVENT_COLUMNS, out, listed.items);
        tellMore(listed);
      }),
    );
}
