import { createReadStream, statSync } from 'node:fs';
import { extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { DomainError } from '../domain/errors.js';

/**
 * Where `npm run build` puts the dashboard: dashboard/dist of this package,
 * found from this file (src/http or dist/http alike), never from the working
 * directory, so `tollgate serve` run from anywhere serves the same pages.
 */
export const PACKAGE_DASHBOARD_DIR = fileURLToPath(new URL('../../dashboard/dist/', import.meta.url));

/** No inline script or style, nothing from another origin, no framing: the pages only talk to this server. */
export const DASHBOARD_CSP = [
  "default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:", "connect-src 'self'",
  "frame-ancestors 'none'", "base-uri 'none'", "form-action 'self'", "object-src 'none'",
].join('; ');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml', '.png': 'image/png', '.jpg': 'image/jpeg', '.ico': 'image/x-icon',
  '.woff2': 'font/woff2', '.woff': 'font/woff', '.json': 'application/json', '.txt': 'text/plain; charset=utf-8',
  '.webmanifest': 'application/manifest+json',
};

/** Vite names everything under assets/ by its content hash: a changed file is a new name, so these never go stale. */
const IMMUTABLE = 'public, max-age=31536000, immutable';

function fileAt(path: string): number | null {
  try {
    const st = statSync(path);
    return st.isFile() ? st.size : null;
  } catch {
    return null;
  }
}

/** The precompressed copies `npm run build` writes beside each file (dashboard/vite.config.ts), best first. */
const ENCODINGS = [['br', '.br'], ['gzip', '.gz']] as const;

/**
 * The codings an Accept-Encoding header allows (RFC 9110 12.5.3): listed with a q above 0,
 * or covered by `*` and not refused by name. No header: identity only, as a client that
 * says nothing may not understand any coding.
 */
export function acceptedEncodings(header: string | undefined): Set<string> {
  const accepted = new Set<string>();
  if (!header) return accepted;
  const named = new Map<string, number>();
  for (const part of header.split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    if (!name) continue;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const weight = q === undefined ? 1 : Number(q.slice(2));
    named.set(name.trim(), Number.isFinite(weight) ? weight : 0);
  }
  const star = named.get('*');
  for (const [coding] of ENCODINGS) {
    const weight = named.get(coding) ?? star ?? 0;
    if (weight > 0) accepted.add(coding);
  }
  return accepted;
}

/**
 * GET /dashboard and everything under it: the built files, and index.html
 * for any other path that is not a file name (the pages' own routes, such
 * as /dashboard/apps/…), under a strict Content-Security-Policy. No build
 * yet: 503 dashboard_not_built. A path that leaves the directory: 404.
 */
export function dashboardRoutes(app: FastifyInstance, dir: string | null): void {
  const root = resolve(dir ?? PACKAGE_DASHBOARD_DIR);
  const send = (reply: FastifyReply, accept: string | undefined, path: string, size: number, cache: string) => {
    // Every answer here may differ by Accept-Encoding, so caches must key on it, identity ones included.
    reply.header('cache-control', cache).header('vary', 'Accept-Encoding').type(TYPES[extname(path).toLowerCase()] ?? 'application/octet-stream');
    const accepted = acceptedEncodings(accept);
    for (const [coding, suffix] of ENCODINGS) {
      const compressedSize = accepted.has(coding) ? fileAt(path + suffix) : null;
      if (compressedSize !== null) return reply.header('content-encoding', coding).header('content-length', compressedSize).send(createReadStream(path + suffix));
    }
    return reply.header('content-length', size).send(createReadStream(path));
  };

  void app.register(async (scope) => {
    scope.addHook('onRequest', (_request, reply, done) => {
      reply.header('content-security-policy', DASHBOARD_CSP).header('x-content-type-options', 'nosniff');
      done();
    });
    const handler = async (request: { params: unknown; headers: { 'accept-encoding'?: string } }, reply: FastifyReply) => {
      const accept = request.headers['accept-encoding'];
      const index = join(root, 'index.html');
      const indexSize = fileAt(index);
      if (indexSize === null) throw new DomainError('dashboard_not_built');
      const rest = (request.params as { '*'?: string })['*'] ?? '';
      const target = resolve(root, rest);
      if (rest.includes('\0') || (target !== root && !target.startsWith(root + sep))) throw new DomainError('not_found');
      const size = rest === '' ? null : fileAt(target);
      if (size !== null) return send(reply, accept, target, size, target.startsWith(join(root, 'assets') + sep) ? IMMUTABLE : 'no-cache');
      // A missing file (a name with an extension) is a 404, not the page: a script tag given HTML fails obscurely.
      if (extname(rest) !== '') throw new DomainError('not_found');
      return send(reply, accept, index, indexSize, 'no-cache');
    };
    scope.get('/dashboard', { schema: { hide: true } }, handler);
    scope.get('/dashboard/*', { schema: { hide: true } }, handler);
  });
}
