import type { Command } from 'commander';
import { CliError } from '../api.js';
import { positiveInt, remote, requireApp, type CliContext } from '../context.js';
import { fetchList, listOptions, tellMore } from '../lists.js';
import { templateId } from './licenses.js';
import { printDone, printObject, printRows } from '../output.js';

const PROVIDERS = ['stripe', 'paddle', 'lemonsqueezy'];

function provider(value: string): string {
  if (!PROVIDERS.includes(value)) throw new CliError(`unknown store ${value}: one of ${PROVIDERS.join(', ')}`);
  return value;
}

/** The secret from standard input (one line), never from the command line, where `ps` and shell history would keep it. */
async function secretFromStdin(): Promise<string> {
  if (process.stdin.isTTY) throw new CliError('pipe the signing secret in on standard input, e.g. printf %s "$STRIPE_WHSEC" | tollgate integrations set stripe');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  const line = Buffer.concat(chunks).toString('utf8').split(/\r?\n/)[0] ?? '';
  if (line === '') throw new CliError('standard input was empty: no signing secret');
  return line;
}

async function grant(ctx: CliContext, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const opts = ctx.opts;
  if (opts.template !== undefined) body.template_id = await templateId(ctx, opts.template as string);
  if (opts.minutes !== undefined) body.minutes = opts.minutes;
  if (opts.lifetime) body.lifetime = true;
  if (opts.codes !== undefined) body.codes_per_unit = opts.codes;
  if (opts.note !== undefined) body.note = opts.note;
  return body;
}

export function integrationsCommand(program: Command): void {
  const integrations = program
    .command('integrations')
    .description('Sales in: Stripe, Paddle and Lemon Squeezy webhooks that create licenses (docs/integrations.md)');

  integrations
    .command('list')
    .description('The stores this app sells through, and the path each must post its webhooks to')
    .action(remote(async (ctx) => {
      const res = await ctx.api.json<{ items: Record<string, unknown>[] }>('GET', `admin/v1/apps/${requireApp(ctx)}/integrations`);
      printRows(res.items, ['provider', 'enabled', 'secret_hint', 'webhook_path', 'updated_at'], ctx.out, res.items);
    }));

  integrations
    .command('set')
    .description('Set or replace a store\'s webhook signing secret, read from standard input (never shown again)')
    .argument('<provider>', PROVIDERS.join(' | '))
    .option('--disabled', 'store the secret but refuse deliveries until enabled')
    .action(remote(async (ctx, name) => {
      const body: Record<string, unknown> = { signing_secret: await secretFromStdin() };
      if (ctx.opts.disabled) body.enabled = false;
      printObject(await ctx.api.json('PUT', `admin/v1/apps/${requireApp(ctx)}/integrations/${provider(name)}`, body), ctx.out);
    }));

  for (const [verb, enabled] of [['enable', true], ['disable', false]] as const) {
    integrations
      .command(verb)
      .description(enabled ? 'Accept the store\'s webhooks again' : 'Refuse the store\'s webhooks (401) without forgetting its secret or mappings')
      .argument('<provider>')
      .action(remote(async (ctx, name) => printObject(await ctx.api.json('PATCH', `admin/v1/apps/${requireApp(ctx)}/integrations/${provider(name)}`, { enabled }), ctx.out)));
  }

  integrations
    .command('delete')
    .description('Remove a store integration and its product mappings (orders stay)')
    .argument('<provider>')
    .action(remote(async (ctx, name) => {
      await ctx.api.json('DELETE', `admin/v1/apps/${requireApp(ctx)}/integrations/${provider(name)}`);
      printDone(`deleted the ${name} integration`, ctx.out);
    }));

  const products = integrations.command('products').description('What each store product or price grants');

  products
    .command('list')
    .description('List the mapped products of a store and what each grants')
    .argument('<provider>')
    .action(remote(async (ctx, name) => {
      const res = await ctx.api.json<{ items: Record<string, unknown>[] }>('GET', `admin/v1/apps/${requireApp(ctx)}/integrations/${provider(name)}/products`);
      printRows(res.items, ['id', 'product_key', 'minutes', 'lifetime', 'template_id', 'codes_per_unit', 'note'], ctx.out, res.items);
    }));

  products
    .command('add')
    .description('Map a product or price id: each unit bought makes --codes licenses of --minutes, --lifetime, or from --template')
    .argument('<provider>')
    .argument('<product_key>', 'Stripe price_/prod_/plink_ id, Paddle pri_/pro_ id, Lemon Squeezy variant or product id')
    .option('--minutes <n>', 'minutes each code adds (and each renewal adds again)', positiveInt)
    .option('--lifetime', 'each code grants lifetime access')
    .option('--template <template>', 'make each code from this license template (its id or name): its duration, entitlements, limits; a renewal extends by its duration')
    .option('--codes <n>', 'codes per unit bought (default 1)', positiveInt)
    .option('--note <text>', 'a note kept with the mapping')
    .action(remote(async (ctx, name, key) => {
      const body = await grant(ctx, { product_key: key });
      printObject(await ctx.api.json('POST', `admin/v1/apps/${requireApp(ctx)}/integrations/${provider(name)}/products`, body), ctx.out);
    }));

  products
    .command('update')
    .description('Change what future sales of a mapped product grant')
    .argument('<provider>')
    .argument('<mapping_id>')
    .option('--minutes <n>', 'minutes each code adds (replaces a template)', positiveInt)
    .option('--lifetime', 'each code grants lifetime access (replaces a template)')
    .option('--template <template>', 'make each code from this license template (its id or name) instead')
    .option('--codes <n>', 'codes per unit bought', positiveInt)
    .option('--note <text>', 'a note kept with the mapping')
    .action(remote(async (ctx, name, id) => {
      printObject(await ctx.api.json('PATCH', `admin/v1/apps/${requireApp(ctx)}/integrations/${provider(name)}/products/${id}`, await grant(ctx, {})), ctx.out);
    }));

  products
    .command('delete')
    .description('Unmap a product (its later sales are acknowledged as unknown_product)')
    .argument('<provider>')
    .argument('<mapping_id>')
    .action(remote(async (ctx, name, id) => {
      await ctx.api.json('DELETE', `admin/v1/apps/${requireApp(ctx)}/integrations/${provider(name)}/products/${id}`);
      printDone(`deleted mapping ${id}`, ctx.out);
    }));

  const orders = program.command('orders').description('Orders received from stores and the licenses each created');
  listOptions(orders.command('list').description('List orders, oldest first')).action(remote(async (ctx) => {
    const listed = await fetchList<Record<string, unknown>>(ctx.api, `admin/v1/apps/${requireApp(ctx)}/orders`, ctx.opts, 'orders');
    printRows(listed.items, ['id', 'provider', 'order_ref', 'buyer_email', 'status', 'created_at'], ctx.out, listed.items);
    tellMore(listed);
  }));
  orders
    .command('get')
    .description('An order with its licenses (codes) and their state')
    .argument('<order_id>')
    .action(remote(async (ctx, id) => printObject(await ctx.api.json('GET', `admin/v1/apps/${requireApp(ctx)}/orders/${id}`), ctx.out)));
}
