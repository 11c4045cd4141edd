import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config/index.js';
import { oneLineFailure, run, tempDir } from './cli-process.js';
import { STORE } from './helpers.js';

/**
 * Issue 11, finding 7: `TRUST_PROXY=0.0.0.0/0` was accepted without a word.
 * Trusting every address lets any client write its own X-Forwarded-For, so
 * IP bans and per-IP limits would mean nothing: the start stops with the one
 * line every bad setting gets. SQLite project only: nothing here touches a store.
 */
const TRUST_ALL = ['0.0.0.0/0', '::/0', '::ffff:0:0/96', '::ffff:0.0.0.0/96', '10.0.0.1, 0.0.0.0/0', 'loopback,::/0'];

describe.skipIf(STORE !== 'sqlite')('TRUST_PROXY that trusts every address', () => {
  it.each(TRUST_ALL)('%s is a ConfigError naming the setting', (value) => {
    let error: unknown;
    try {
      loadConfig({ TRUST_PROXY: value });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(/^invalid TRUST_PROXY: ".*" trusts every address/);
  });

  it('narrower ranges and the keywords are still accepted', () => {
    expect(loadConfig({ TRUST_PROXY: '10.0.0.0/8,::1,fd00::/8,loopback,uniquelocal,0.0.0.0/1' }).trustProxy).toHaveLength(6);
  });

  it('tollgate serve stops with one line naming TRUST_PROXY and creates no database', async () => {
    for (const [args, env] of [[[], { TRUST_PROXY: '0.0.0.0/0' }], [['--trust-proxy', '::/0'], {}]] as const) {
      const cwd = tempDir();
      const line = oneLineFailure(await run(['serve', '--port', '0', ...args], cwd, env));
      expect(line).toMatch(/^tollgate: invalid (TRUST_PROXY|--trust-proxy): "(0\.0\.0\.0\/0|::\/0)" trusts every address/);
      expect(readdirSync(cwd)).toEqual([]);
    }
  });
});
