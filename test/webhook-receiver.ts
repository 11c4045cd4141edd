import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  /** The request's path and query (a Discord endpoint's carries its token). */
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

/**
 * A real loopback receiver for webhook tests: records every request, and answers as `respond` says
 * (status, headers, body; 'hang' never answers). The default answers 200.
 */
export class Receiver {
  readonly received: Received[] = [];
  respond: (n: number, r: Received) => { status: number; headers?: Record<string, string>; body?: string } | 'hang' = () => ({ status: 200 });
  private server!: Server;
  private hanging = new Set<ServerResponse>();
  private waiters: (() => void)[] = [];

  static async start(): Promise<Receiver> {
    const r = new Receiver();
    r.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const got = { path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
        r.received.push(got);
        const answer = r.respond(r.received.length, got);
        for (const w of r.waiters.splice(0)) w();
        if (answer === 'hang') {
          r.hanging.add(res);
          return;
        }
        res.writeHead(answer.status, answer.headers ?? {});
        res.end(answer.body ?? '');
      });
    });
    await new Promise<void>((resolve) => r.server.listen(0, '127.0.0.1', resolve));
    return r;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }

  /** Resolves once `n` requests have arrived (or rejects after `ms`). */
  async count(n: number, ms = 10_000): Promise<Received[]> {
    const deadline = Date.now() + ms;
    while (this.received.length < n) {
      if (Date.now() > deadline) throw new Error(`receiver: ${this.received.length} of ${n} requests within ${ms} ms`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 50);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    return this.received;
  }

  async close(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
