import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config/index.js';
import { proxyTrust } from '../src/net/proxy.js';
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

  /**
   * Node's BlockList matches an IPv4 client against an IPv6 range holding ::ffff:0:0/96, so `::/8`
   * trusted every IPv4 client; and a list can cover a family in pieces. Each is refused, and each
   * really does trust both ends of the family it names (the server's own trust, built from it).
   */
  const FAMILY_ENDS = { IPv4: ['0.0.0.0', '255.255.255.255'], IPv6: ['::', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'] };
  it.each([
    ['::/8', 'IPv4', /^invalid TRUST_PROXY: "::\/8" trusts every IPv4 address/],
    ['::/1', 'IPv4', /^invalid TRUST_PROXY: "::\/1" trusts every IPv4 address/],
    ['::/64', 'IPv4', /^invalid TRUST_PROXY: "::\/64" trusts every IPv4 address/],
    ['10.0.0.1, ::/80', 'IPv4', /^invalid TRUST_PROXY: "::\/80" trusts every IPv4 address/],
    ['0.0.0.0/1,128.0.0.0/1', 'IPv4', /^invalid TRUST_PROXY: "0\.0\.0\.0\/1,128\.0\.0\.0\/1" together trust every IPv4 address/],
    ['::ffff:0:0/97, ::ffff:128.0.0.0/97', 'IPv4', /together trust every IPv4 address/],
    ['0.0.0.0/2,64.0.0.0/2,128.0.0.0/2,loopback,192.0.0.0/2', 'IPv4', /together trust every IPv4 address/],
    ['8000::/1,::/1', 'IPv6', /^invalid TRUST_PROXY: "::\/1" trusts every IPv4 address/],
  ] as const)('%s trusts every %s address: a ConfigError naming the setting', (value, family, message) => {
    const trusted = proxyTrust(value.split(',').map((e) => e.trim()));
    for (const end of FAMILY_ENDS[family]) expect(trusted(end), end).toBe(true);
    let error: unknown;
    try {
      loadConfig({ TRUST_PROXY: value });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(message);
  });

  it('ranges that leave part of a family untrusted are the operator\'s call: ::/81, two ends alone, three quarters', () => {
    for (const value of ['::/81', '8000::/1', '0.0.0.0/8,255.0.0.0/8', '0.0.0.0/2,64.0.0.0/2,128.0.0.0/2', '::ffff:0:0/97']) {
      expect(loadConfig({ TRUST_PROXY: value }).trustProxy?.length, value).toBeGreaterThan(0);
    }
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
