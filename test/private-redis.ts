import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createConnection, createServer } from 'node:net';

/**
 * A redis-server of the test's own, on a free port, that the test may kill,
 * freeze and restart (the shared one on 6379 is never touched). Null, with a
 * loud banner, where the binary is missing: the caller skips, never passes.
 */
export interface PrivateRedis {
  readonly url: string;
  /** SIGKILL: connections drop at once, nothing answers on the port. */
  kill(): Promise<void>;
  /** SIGSTOP: the port still accepts connections, but nothing is ever answered. */
  freeze(): void;
  thaw(): void;
  /** A fresh, empty server on the same port. */
  start(): Promise<void>;
  /** Stops it for good (afterAll), thawed first so SIGKILL is not held up. */
  stop(): Promise<void>;
}

export const redisServerMissing = spawnSync('redis-server', ['--version']).status !== 0;
if (redisServerMissing) process.stderr.write('\n!!! redis-server is not installed: the private-Redis tests are SKIPPED, not passed !!!\n\n');

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.setTimeout(500);
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (d) => (socket.destroy(), resolve(d.toString().startsWith('+PONG'))));
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => (socket.destroy(), resolve(false)));
  });
}

export async function privateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  let child: ChildProcess | null = null;

  const exited = (c: ChildProcess) => new Promise<void>((resolve) => (c.exitCode !== null || c.signalCode !== null ? resolve() : c.once('exit', () => resolve())));
  const redis: PrivateRedis = {
    url: `redis://127.0.0.1:${port}`,
    async start() {
      child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
      for (let i = 0; i < 100; i++) {
        if (await answersPing(port)) return;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`private redis-server on port ${port} did not start`);
    },
    async kill() {
      const c = child;
      if (!c) return;
      child = null;
      c.kill('SIGCONT');
      c.kill('SIGKILL');
      await exited(c);
    },
    freeze: () => void child?.kill('SIGSTOP'),
    thaw: () => void child?.kill('SIGCONT'),
    stop: () => redis.kill(),
  };
  await redis.start();
  return redis;
}
