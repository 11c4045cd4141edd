import { createReadStream, statSync } from 'node:fs';
import { basename } from 'node:path';
import { Transform } from 'node:stream';
import { SingleBar, Presets } from 'cli-progress';
import type { Command } from 'commander';
import { CliError, query } from '../api.js';
import { remote, requireApp } from '../context.js';
import { printDone, printObject, printRows } from '../output.js';

export function varsCommand(program: Command): void {
  const vars = program.command('vars').description('Application variables handed to licensed clients');
  vars.command('list').description('List variables').action(
    remote(async (ctx) => {
      const res = await ctx.api.json<{ items: Record<string, unknown>[] }>('GET', `admin/v1/apps/${requireApp(ctx)}/variables`);
      printRows(res.items, ['name', 'value', 'updated_at'], ctx.out);
    }),
  );
  vars.command('get').description('Show a variable').argument('<name>').action(
    remote(async (ctx, name) => printObject(await ctx.api.json('GET', `admin/v1/apps/${requireApp(ctx)}/variables/${encodeURIComponent(name)}`), ctx.out)),
  );
  vars.command('set').description('Create or replace a variable').argument('<name>').argument('<value>').action(
    remote(async (ctx, name, value) =>
      printObject(await ctx.api.json('PUT', `admin/v1/apps/${requireApp(ctx)}/variables/${encodeURIComponent(name)}`, { value }), ctx.out),
    ),
  );
  vars.command('delete').description('Delete a variable').argument('<name>').action(
    remote(async (ctx, name) => {
      await ctx.api.json('DELETE', `admin/v1/apps/${requireApp(ctx)}/variables/${encodeURIComponent(name)}`);
      printDone(`deleted variable ${name}`, ctx.out);
    }),
  );
}

/** A file read from disk as a stream, counting bytes into a progress bar on stderr (stdout stays clean for --json). */
function progressStream(path: string, quiet: boolean) {
  let size: number;
  try {
    size = statSync(path).size;
  } catch {
    throw new CliError(`cannot read ${path}`);
  }
  const bar = quiet || !process.stderr.isTTY ? null : new SingleBar({ format: ' {bar} {percentage}% | {value}/{total} bytes', stream: process.stderr }, Presets.shades_classic);
  bar?.start(size, 0);
  let sent = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _enc, done) {
      sent += chunk.length;
      bar?.update(sent);
      done(null, chunk);
    },
    flush(done) {
      bar?.stop();
      done();
    },
  });
  return { stream: createReadStream(path).pipe(counter), size, stop: () => bar?.stop() };
}

export function filesCommand(program: Command): void {
  const files = program.command('files').description('Files handed to licensed clients');
  files.command('list').description('List files').action(
    remote(async (ctx) => {
      const res = await ctx.api.json<{ items: Record<string, unknown>[] }>('GET', `admin/v1/apps/${requireApp(ctx)}/files`);
      printRows(res.items, ['id', 'name', 'mime_type', 'is_encrypted', 'size', 'sha256'], ctx.out);
    }),
  );
  files
    .command('upload')
    .description('Upload a file (streamed, with a progress bar)')
    .argument('<path>')
    .option('--name <name>', 'name shown to clients (default: the file name)')
    .option('--mime-type <type>', 'media type (default application/octet-stream)')
    .option('--encrypted', 'mark the file as encrypted')
    .action(
      remote(async (ctx, path) => {
        const app = requireApp(ctx);
        const { stream, size, stop } = progressStream(path, ctx.out.json === true);
        const q = query({ name: (ctx.opts.name as string | undefined) ?? basename(path), mime_type: ctx.opts.mimeType as string | undefined, is_encrypted: ctx.opts.encrypted ? 'true' : undefined });
        try {
          printObject(await ctx.api.upload('POST', `admin/v1/apps/${app}/files${q}`, stream, size), ctx.out);
        } finally {
          stop();
        }
      }),
    );
  files.command('replace').description('Replace a file’s content, keeping its id').argument('<file_id>').argument('<path>').action(
    remote(async (ctx, id, path) => {
      const { stream, size, stop } = progressStream(path, ctx.out.json === true);
      try {
        printObject(await ctx.api.upload('PUT', `admin/v1/apps/${requireApp(ctx)}/files/${id}/content`, stream, size), ctx.out);
      } finally {
        stop();
      }
    }),
  );
  files.command('get').description('Show a file’s metadata').argument('<file_id>').action(
    remote(async (ctx, id) => printObject(await ctx.api.json('GET', `admin/v1/apps/${requireApp(ctx)}/files/${id}`), ctx.out)),
  );
  files.command('delete').description('Delete a file').argument('<file_id>').action(
    remote(async (ctx, id) => {
      await ctx.api.json('DELETE', `admin/v1/apps/${requireApp(ctx)}/files/${id}`);
      printDone(`deleted file ${id}`, ctx.out);
    }),
  );
}
