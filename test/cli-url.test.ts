import { describe, expect, it } from 'vitest';
import { ROOT, run } from './cli-process.js';
import { STORE } from './helpers.js';

/**
 * --url as typed, the failures: one line, exit 1, and a password typed into
 * the URL never echoed (a CI log keeps what the CLI prints). No server is
 * needed: each is refused before any request.
 */
describe.skipIf(STORE !== 'sqlite')('tollgate --url garbage (SQLite project only: the store plays no part)', () => {
  for (const url of ['http://ops:s3cr3t-pw@127.0.0.1:9', 'ops:s3cr3t-pw@127.0.0.1:9']) {
    it(`${url.replace('s3cr3t-pw', '…')}: refused in one line that does not show the password`, async () => {
      const r = await run(['apps', 'list', '--url', url, '--token', 'x'.repeat(20)], ROOT);
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(/^tollgate: --url .*ops:\*\*\*@.*user name or password/);
      expect(r.stderr).not.toContain('s3cr3t-pw');
    });
  }

  it('a password in a URL that does not parse is not shown either', async () => {
    const r = await run(['apps', 'list', '--url', 'http://ops:s3cr3t-pw@[::1', '--token', 'x'.repeat(20)], ROOT);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^tollgate: --url .* is not a server address/);
    expect(r.stderr).not.toContain('s3cr3t-pw');
  });
});
