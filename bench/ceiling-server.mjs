// The ceilings: a bare node:http server with none of Tollgate's work.
//   GET /json          a fixed JSON body of --json-bytes bytes (the size of /app_context's answer)
//   GET /file/<name>   fs.createReadStream of <dir>/<name>, the raw download rate
//   POST /argon2       the least an HTTP password route can do (with --dist): read the JSON body, one
//                      argon2id verify of `credentials.password` (a login) or one hash of `password`
//                      (a sign-up) with the project's own hasher, answer a small JSON token
//   GET /json-signed   the signature's own limit (with --dist): the /json body plus, per request, what a signed
//                      Tollgate answer needs besides Tollgate's access work, by the server's own code
//                      (<dist>/http/signed-answer.js, as the fast path calls it): the nonce's pattern, the SHA-256
//                      of the credential lines and of the body, the signed bytes in Tollgate's layout, one Ed25519
//                      signature by the server's signer (sodium-native when it loads), and the two headers,
//                      Tollgate-Signature and Tollgate-Key-Cert (a real certificate of that key, made at start by a
//                      throwaway root key, as bench/lib/tollgate.mjs setUpSigningKey)
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
 * What /json-signed signs with, made once: a key as the server holds one (a fresh Ed25519 key, a UUID kid and app id
 * as long as the server's, a real certificate of the key, so Tollgate-Key-Cert is as long), and the server's own
 * signed-answer code (dist/http/signed-answer.js: signatureOf and credentialsSha256, the signer they use, the nonce
 * pattern): the signing work is Tollgate's, byte for byte the same layouts.
 */
async function signedAnswers(dist) {
  const load = (...path) => import(pathToFileURL(join(dist, ...path)).href);
  const { credentialsSha256, NO_BODY_SHA256, signatureOf } = await load('http', 'signed-answer.js');
  const { b64url, certificateInput, encodeCertificate, NONCE, sha256Hex } = await load('domain', 'signing', 'format.js');
  const pair = generateKeyPairSync('ed25519');
  const root = generateKeyPairSync('ed25519');
  const now = Date.now();
  const fields = { app_id: randomUUID(), kid: randomUUID(), public_key: pair.publicKey.export({ format: 'jwk' }).x, not_before: now - 60_000, not_after: now + 30 * 24 * 3600 * 1000 };
  const certificate = encodeCertificate({ v: 1, ...fields, sig: b64url(sign(null, certificateInput(fields), root.privateKey)) });
  const key = { kid: fields.kid, appId: fields.app_id, privateKey: pair.privateKey, certificate, notBefore: fields.not_before, notAfter: fields.not_after };
  return { key, credentialsSha256, NO_BODY_SHA256, signatureOf, NONCE, sha256Hex, body: json.toString('latin1') };
}

/**
 * /json-signed: the JSON body and the Tollgate-Signature the server's fast path makes (the nonce's pattern, the
 * credential lines' hash, the body's hash of the string, signatureOf), with no access work: what any server answering
 * signed costs here. A missing or malformed nonce is signed as a fixed one (the bench always sends a valid one).
 */
function signedJsonRoute(req, res) {
  const s = signed;
  const t = Date.now();
  const sent = req.headers['tollgate-nonce'];
  const nonce = typeof sent === 'string' && s.NONCE.test(sent) ? sent : 'ceiling-nonce-0123456789abcdef';
  const signature = s.signatureOf(s.key, t, {
    nonce, appId: s.key.appId, status: 200, method: 'GET', target: req.url, requestBodySha256: s.NO_BODY_SHA256,
    credentialsSha256: s.credentialsSha256(req.headers), responseLine: s.sha256Hex(s.body),
  });
  res.writeHead(200, [
    'content-type', 'application/json; charset=utf-8', 'tollgate-signature', signature, 'tollgate-key-cert', s.key.certificate, 'content-length', String(json.length),
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
