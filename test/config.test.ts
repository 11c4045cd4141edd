import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, type Config } from '../src/config/index.js';

/** Configuration (DECISIONS "Running it"): environment, flags that win, one clear line naming a bad setting. */

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError, nothing was thrown');
}

describe('defaults', () => {
  it('an empty environment gives the documented defaults', () => {
    const config = loadConfig({});
    expect(config.port).toBe(8080);
    expect(config.host).toBe('127.0.0.1');
    expect(config.databaseUrl).toBe('sqlite:./data/tollgate.db');
    expect(config.rateLimit).toBe(true);
    expect(config.logLevel).toBe('info');
    expect(config.adminToken).toBeNull();
    expect(config.trustProxy).toBeNull();
    expect(config.redisUrl).toBeNull();
  });

  it('unrelated environment variables are ignored', () => {
    expect(loadConfig({ HOME: '/root', PATH: '/bin', port: '1234' }).port).toBe(8080);
  });

  it('an empty environment value counts as unset', () => {
    const config = loadConfig({ PORT: '', RATE_LIMIT: '', TOLLGATE_ADMIN_TOKEN: '' });
    expect(config.port).toBe(8080);
    expect(config.rateLimit).toBe(true);
    expect(config.adminToken).toBeNull();
  });
});

describe('valid values', () => {
  it('reads every setting from the environment', () => {
    const config = loadConfig({
      PORT: '9000',
      HOST: '0.0.0.0',
      DATABASE_URL: 'sqlite:/var/lib/tollgate/db.sqlite',
      TOLLGATE_ADMIN_TOKEN: 'a-very-long-admin-token',
      TRUST_PROXY: '10.0.0.0/8, 192.168.1.1',
      LOG_LEVEL: 'debug',
      REDIS_URL: 'redis://cache:6379',
      RATE_LIMIT: 'off',
    });
    expect(config).toMatchObject({
      port: 9000,
      host: '0.0.0.0',
      databaseUrl: 'sqlite:/var/lib/tollgate/db.sqlite',
      adminToken: 'a-very-long-admin-token',
      trustProxy: ['10.0.0.0/8', '192.168.1.1'],
      logLevel: 'debug',
      redisUrl: 'redis://cache:6379',
      rateLimit: false,
    });
  });

  it.each([['0', 0], ['1', 1], ['65535', 65535]])('PORT=%s → %i', (raw, port) => {
    expect(loadConfig({ PORT: raw }).port).toBe(port);
  });

  it.each([['postgres://u:p@db:5432/tollgate'], ['postgresql://db/tollgate'], ['sqlite:./relative.db'], ['sqlite:/absolute/path.db']])('DATABASE_URL=%s is accepted', (url) => {
    expect(loadConfig({ DATABASE_URL: url }).databaseUrl).toBe(url);
  });

  it.each([['fatal'], ['error'], ['warn'], ['info'], ['debug'], ['trace'], ['silent']])('LOG_LEVEL=%s is accepted', (level) => {
    expect(loadConfig({ LOG_LEVEL: level }).logLevel).toBe(level);
  });

  it.each([['on', true], ['off', false]])('RATE_LIMIT=%s → %s', (raw, value) => {
    expect(loadConfig({ RATE_LIMIT: raw }).rateLimit).toBe(value);
  });

  it('TRUST_PROXY takes IPv6 addresses and ranges', () => {
    expect(loadConfig({ TRUST_PROXY: '::1,fd00::/8' }).trustProxy).toEqual(['::1', 'fd00::/8']);
  });

  it('TOLLGATE_ADMIN_TOKEN of 16 characters (the minimum) is accepted as given', () => {
    expect(loadConfig({ TOLLGATE_ADMIN_TOKEN: '0123456789abcdef' }).adminToken).toBe('0123456789abcdef');
  });
});

describe('bad values: a ConfigError whose one-line message names the setting', () => {
  it.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['PORT', '65536'],
    ['PORT', '-1'],
    ['PORT', '80.5'],
    ['PORT', ' 8080'],
    ['HOST', ' '],
    ['LOG_LEVEL', 'loud'],
    ['LOG_LEVEL', 'INFO'],
    ['DATABASE_URL', 'mysql://x'],
    ['DATABASE_URL', 'sqlite:'],
    ['DATABASE_URL', './data/tollgate.db'],
    ['RATE_LIMIT', 'maybe'],
    ['RATE_LIMIT', 'true'],
    ['TRUST_PROXY', 'not-an-ip'],
    ['TRUST_PROXY', '10.0.0.1,not-an-ip'],
    ['TRUST_PROXY', '10.0.0.0/33'],
    ['TRUST_PROXY', ','],
    ['TOLLGATE_ADMIN_TOKEN', 'short'],
    ['TOLLGATE_ADMIN_TOKEN', '0123456789abcde'],
    ['TOLLGATE_ADMIN_TOKEN', 'sixteen chars with spaces'],
    ['REDIS_URL', 'http://cache:6379'],
  ])('%s=%j', (name, value) => {
    const err = configError(() => loadConfig({ [name]: value }));
    expect(err.name).toBe('ConfigError');
    expect(err.setting).toBe(name);
    expect(err.message).toContain(name);
    expect(err.message).not.toContain('\n');
    expect(err.message.length).toBeGreaterThan(name.length + 5);
  });

  it('the message says what a good value looks like', () => {
    expect(configError(() => loadConfig({ PORT: 'abc' })).message).toMatch(/PORT.*(integer|65535)/);
    expect(configError(() => loadConfig({ LOG_LEVEL: 'loud' })).message).toMatch(/LOG_LEVEL.*info/);
    expect(configError(() => loadConfig({ RATE_LIMIT: 'maybe' })).message).toMatch(/RATE_LIMIT.*on.*off/);
    expect(configError(() => loadConfig({ TRUST_PROXY: 'not-an-ip' })).message).toMatch(/TRUST_PROXY.*not-an-ip/);
  });

  it('a bad value among good ones is still refused', () => {
    const err = configError(() => loadConfig({ PORT: '9000', HOST: '0.0.0.0', LOG_LEVEL: 'loud', RATE_LIMIT: 'off' }));
    expect(err.setting).toBe('LOG_LEVEL');
  });

  it('the admin token value does not appear in the error', () => {
    const err = configError(() => loadConfig({ TOLLGATE_ADMIN_TOKEN: 'secret token with spaces' }));
    expect(err.message).not.toContain('secret token with spaces');
  });
});

describe('flags', () => {
  it('a flag wins over the environment', () => {
    const config = loadConfig(
      { PORT: '9000', HOST: '0.0.0.0', LOG_LEVEL: 'debug', RATE_LIMIT: 'on', DATABASE_URL: 'sqlite:./env.db' },
      { port: '9100', host: '127.0.0.2', logLevel: 'warn', rateLimit: 'off', databaseUrl: 'sqlite:./flag.db' },
    );
    expect(config).toMatchObject({ port: 9100, host: '127.0.0.2', logLevel: 'warn', rateLimit: false, databaseUrl: 'sqlite:./flag.db' });
  });

  it('a good flag overrides a bad environment value', () => {
    expect(loadConfig({ PORT: 'abc' }, { port: '9100' }).port).toBe(9100);
  });

  it('settings without a flag still come from the environment', () => {
    const config = loadConfig({ PORT: '9000', LOG_LEVEL: 'error' }, { host: '0.0.0.0' });
    expect(config).toMatchObject({ port: 9000, logLevel: 'error', host: '0.0.0.0' });
  });

  it('a bad flag is refused, naming the flag', () => {
    const err = configError(() => loadConfig({ PORT: '9000' }, { port: '70000' }));
    expect(err.setting).toBe('--port');
    expect(err.message).toContain('--port');
  });

  it('an empty flag is a value, and a bad one', () => {
    const err = configError(() => loadConfig({ PORT: '9000' }, { port: '' }));
    expect(err.message).toContain('--port');
  });
});

describe('the returned object', () => {
  it('is frozen', () => {
    const config = loadConfig({ PORT: '9000' });
    expect(Object.isFrozen(config)).toBe(true);
    expect(() => {
      (config as Config).port = 1;
    }).toThrow(TypeError);
    expect(config.port).toBe(9000);
  });

  it('is a fresh object each time: freezing one does not touch the defaults of the next', () => {
    const one = loadConfig({ PORT: '9000' });
    const two = loadConfig({});
    expect(one).not.toBe(two);
    expect(two.port).toBe(8080);
    expect(Object.isFrozen(two)).toBe(true);
  });

  it('does not read process.env', () => {
    const saved = process.env.PORT;
    process.env.PORT = '4321';
    try {
      expect(loadConfig({}).port).toBe(8080);
    } finally {
      if (saved === undefined) delete process.env.PORT;
      else process.env.PORT = saved;
    }
  });
});
