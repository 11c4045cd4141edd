// The ceilings: a bare node:http server with none of Tollgate's work.
//   GET /json          a fixed JSON body of --json-bytes bytes (the size of /app_context's answer)
//   GET /file/<name>   fs.createReadStream of <dir>/<name>, the raw download rate
//   POST /argon2       the least an HTTP password route can do (with --dist): read the JSON body, one
//                      argon2id verify of `credentials.password` (a login) or one hash of `password`
//                      (a sign-up) with the project's own hasher, answer a small JSON token
//   GET /json-signed   the signature's own limit (with --dist): the /json body plus, per request, what a signed
//                      Tollgate answer needs besides Tollgate's access work (src/http/signed-answer.ts): one
//                      SHA-256 of the body, one of the credential line (`authorization:<value>\n`, or nothing),
//                      the signed bytes in Tollgate's layout (docs/signing.md: the request's Tollgate-Nonce,
//                      Date.now(), a UUID kid and app id), one Ed25519 signature by the project's own signer
//                      (<dist>/domain/signing/ed25519.js: sodium-native when it loads, as in the server), and
//                      the two headers, Tollgate-Signature and Tollgate-Key-Cert (a real certificate of that
//                      key, made at start by a throwaway root key, as bench/lib/tollgate.mjs setUpSigningKey)
// With --framework fastify, instead: a bare Fastify 5 app whose one route, GET /json, sends the same
// body as a pre-serialized string (the framework's own ceiling: what any Fastify route costs here).
// Usage: node bench/ceiling-server.mjs --port P --json-bytes N [--dir D] [--dist DIST --password PW] [--framework fastify]
import { generateKeyPairSync, randomBytes, randomUUID, sign } from 'node:crypto';
import { createReadStream, readdirSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { pipeline } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    port: { type: 'string' }, 'json-bytes': { type: 'string' }, dir: { type: 'string' }, dist: { type: 'string' }, password: { type: 'string' },
    framework: { type: 'string', default: 'node:http' },
  },
});
const port = Number(values.port);
const jsonBytes = Number(values['json-bytes'] ?? 512);

/** A valid JSON object of exactly `size` bytes. */
function jsonOfSize(size) {
  const skeleton = JSON.stringify({ application: { id: '00000000-0000-4000-8000-000000000000' }, padding: '' });
  const pad = Math.max(0, size - Buffer.byteLength(skeleton));
  return Buffer.from(JSON.stringify({ application: { id: '00000000-0000-4000-8000-000000000000' }, padding: 'x'.repeat(pad) }));
}
const json = jsonOfSize(jsonBytes);

const files = new Map();
if (values.dir) {
  for (const name of readdirSync(values.dir)) {
    const path = join(values.dir, name);
    const st = statSync(path);
    if (st.isFile()) files.set(name, { path, size: st.size });
  }
}

let hasher = null;
let stored = null;
if (values.dist) {
  const { argon2Hasher } = await import(pathToFileURL(join(values.dist, 'domain', 'password.js')).href);
  hasher = argon2Hasher();
  stored = await hasher.hash(values.password ?? '');
}
const signed = values.dist && values.framework !== 'fastify' ? await signedAnswers(values.dist) : null;

/**
 * What /json-signed signs with, made once: the server's signer, a fresh Ed25519 key, a kid and an app id
 * as long as the server's (UUIDs) and a real certificate of the key (so Tollgate-Key-Cert is as long).
 */
async function signedAnswers(dist) {
  const { ed25519 } = await import(pathToFileURL(join(dist, 'domain', 'signing', 'ed25519.js')).href);
  const { b64url, certificateInput, encodeCertificate, sha256Hex } = await import(pathToFileURL(join(dist, 'domain', 'signing', 'format.js')).href);
  const key = generateKeyPairSync('ed25519');
  const root = generateKeyPairSync('ed25519');
  const kid = randomUUID();
  const appId = randomUUID();
  const now = Date.now();
  const fields = { app_id: appId, kid, public_key: key.publicKey.export({ format: 'jwk' }).x, not_before: now - 60_000, not_after: now + 30 * 24 * 3600 * 1000 };
  const certificate = encodeCertificate({ v: 1, ...fields, sig: b64url(sign(null, certificateInput(fields), root.privateKey)) });
  return { ed25519, sha256Hex, privateKey: key.privateKey, kid, appId, certificate, noBodySha256: sha256Hex(new Uint8Array(0)) };
}

/**
 * /json-signed: the JSON body and one signature over Tollgate's signed-bytes layout (signatureOf in
 * src/http/signed-answer.ts), with no access work: what any server answering signed costs here.
 */
function signedJsonRoute(req, res) {
  const s = signed;
  const t = Date.now();
  const nonce = req.headers['tollgate-nonce'] ?? 'ceiling-nonce-0123456789abcdef';
  const authorization = req.headers.authorization;
  const credentialsSha256 = s.sha256Hex(authorization === undefined ? '' : `authorization:${authorization}\n`);
  const input = `tollgate/response/v1\n${s.kid}\n${t}\n${nonce}\n${s.appId}\n200\n${req.method} ${req.url}\n${s.noBodySha256}\n${credentialsSha256}\n${s.sha256Hex(json)}`;
  const signature = `v1; kid=${s.kid}; t=${t}; sig=${s.ed25519.sign(Buffer.from(input, 'utf8'), s.privateKey).toString('base64url')}`;
  res.writeHead(200, [
    'content-type', 'application/json; charset=utf-8', 'tollgate-signature', signature, 'tollgate-key-cert', s.certificate, 'content-length', String(json.length),
  ]);
  res.end(json);
}

/**
 * /argon2: a login body is verified against the one stored hash, any other body's password is hashed;
 * a GET verifies its x-api-password header (a password-header request whose credential is not cached).
 */
function argon2Route(req, res) {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', async () => {
    let ok = false;
    try {
      const body = req.method === 'GET' ? { credentials: { password: req.headers['x-api-password'] } } : JSON.parse(Buffer.concat(chunks).toString());
      ok = body.credentials ? await hasher.verify(stored, String(body.credentials.password)) : Boolean(await hasher.hash(String(body.password)));
    } catch {
      ok = false;
    }
    const out = JSON.stringify(ok ? { session_token: `tg_session_${randomBytes(24).toString('base64url')}` } : { detail: 'Invalid credentials', code: 'invalid_credentials' });
    res.writeHead(ok ? 200 : 401, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(out) });
    res.end(out);
  });
}

function bareServer() {
  return createServer((req, res) => {
    if (req.url === '/argon2' && hasher) {
      argon2Route(req, res);
      return;
    }
    if (req.url === '/json-signed' && signed) {
      signedJsonRoute(req, res);
      return;
    }
    if (req.url === '/json') {
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': json.length });
      res.end(json);
      return;
    }
    if (req.url === '/healthz') {
      res.end('ok');
      return;
    }
    const file = req.url?.startsWith('/file/') ? files.get(decodeURIComponent(req.url.slice('/file/'.length))) : undefined;
    if (!file) {
      res.statusCode = 404;
      res.end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': file.size });
    pipeline(createReadStream(file.path), res, () => undefined);
  });
}

/** Fastify's defaults, as a plain Fastify app runs, with the same keep-alive timeout as the bare server. */
async function fastifyServer() {
  const { default: Fastify } = await import('fastify');
  const text = json.toString('utf8');
  const app = Fastify({ logger: false, keepAliveTimeout: 72_000 });
  app.get('/json', (_request, reply) => {
    void reply.header('content-type', 'application/json; charset=utf-8').send(text);
  });
  app.get('/healthz', (_request, reply) => {
    void reply.send('ok');
  });
  await app.listen({ port, host: '127.0.0.1' });
  process.once('SIGTERM', () => app.close().then(() => process.exit(0)));
}

if (values.framework === 'fastify') {
  await fastifyServer();
} else {
  const server = bareServer();
  server.keepAliveTimeout = 72_000;
  server.listen(port, '127.0.0.1');
  process.once('SIGTERM', () => server.close(() => process.exit(0)).closeAllConnections());
}
