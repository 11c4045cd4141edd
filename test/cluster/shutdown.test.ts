import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { admin, startNode, stopNode } from './nodes.js';

const dir = mkdtempSync(join(tmpdir(), 'tollgate-shutdown-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * One POST on its own connection, sent as headers with `Expect: 100-continue`. `accepted` settles once the
 * server has parsed the headers (it answers 100 Continue when it emits the request), so the request is
 * provably in flight; `finish(body)` then sends the body and resolves with the final status. Either
 * rejects, with what the server sent, if the connection fails or closes first.
 */
function openRequest(url: string, path: string, headers: Record<string, string>, bodyLength: number) {
  const { hostname, port } = new URL(url);
  const socket: Socket = connect(Number(port), hostname);
  let received = '';
  let continued = false;
  let onContinue!: () => void;
  let onFail!: (err: Error) => void;
  const accepted = new Promise<void>((resolve, reject) => {
    onContinue = resolve;
    onFail = reject;
  });
  const done = new Promise<number>((resolve, reject) => {
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      if (!continued && received.startsWith('HTTP/1.1 100')) {
        const end = received.indexOf('\r\n\r\n');
        if (end === -1) return;
        received = received.slice(end + 4);
        continued = true;
        onContinue();
      }
      const status = /^HTTP\/1\.1 (\d{3}) /.exec(received);
      if (status && received.includes('\r\n\r\n')) {
        resolve(Number(status[1]));
        socket.destroy();
      }
    });
    const fail = (err: Error) => {
      onFail(err);
      reject(err);
    };
    socket.on('error', fail);
    socket.on('close', () => fail(new Error(`connection closed before an answer; received: ${JSON.stringify(received)}`)));
  });
  done.catch(() => undefined); // observed through `accepted` until `finish` hands it out
  const head = [`POST ${path} HTTP/1.1`, `host: ${hostname}:${port}`, 'content-type: application/json', `content-length: ${bodyLength}`, 'expect: 100-continue', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
  socket.write(head.join('\r\n') + '\r\n\r\n');
  return { accepted, finish: (body: string) => (socket.write(body), done), destroy: () => socket.destroy() };
}

async function until(condition: () => boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('graceful shutdown', () => {
  it('SIGTERM finishes the requests in flight, then exits 0; a restart serves again', async () => {
    const databaseUrl = `sqlite:${join(dir, 'db.sqlite')}`;
    const node = await startNode(databaseUrl, { LOG_LEVEL: 'info' });
    const app = await admin(node.url, 'POST', '/apps', { name: 'Shutdown' });
    const headers = { 'x-api-key': app.body.api_key, 'x-api-secret': app.body.api_secret };
    // Six sign-ups the server has already begun (headers parsed) when the signal arrives; their bodies
    // follow the signal, so each still has its body to read and an argon2 hash to take during shutdown.
    const bodies = Array.from({ length: 6 }, (_, i) => JSON.stringify({ username: `late${i}`, password: 'long enough password' }));
    const requests = bodies.map((body) => openRequest(node.url, '/sign_up', headers, Buffer.byteLength(body)));
    try {
      await Promise.all(requests.map((r) => r.accepted));
      const exited = new Promise<number | null>((r) => node.process.once('exit', (code) => r(code)));
      node.process.kill('SIGTERM');
      // The bodies go out only once shutdown has begun, so the test cannot pass without it.
      await until(() => node.output.join('').includes('shutting down'), 'the shutdown log line');
      const statuses = await Promise.all(requests.map((r, i) => r.finish(bodies[i]!)));
      expect(statuses).toEqual([200, 200, 200, 200, 200, 200]);
      expect(await exited).toBe(0);
    } finally {
      for (const r of requests) r.destroy();
      await stopNode(node, 'SIGKILL');
    }

    const again = await startNode(databaseUrl);
    try {
      const users = await admin(again.url, 'GET', `/apps/${app.body.id}/users`);
      expect(users.body.items).toHaveLength(6);
    } finally {
      again.process.kill('SIGTERM');
    }
  });
});
