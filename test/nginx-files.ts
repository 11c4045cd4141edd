import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';

const DEPLOY = join(import.meta.dirname, '../deploy');

/**
 * deploy/nginx.conf (the whole file) and deploy/nginx-tollgate.conf (the site
 * it includes) copied side by side into `dir` as shipped, changed only where a
 * test cannot use the machine's own places: a throw-away certificate, pid,
 * logs and temp files in `dir`, no `user` (a test may run unprivileged), and
 * `site` for the site's own changes (ports). Returns the whole file's path.
 */
export function scratchNginx(dir: string, site: (text: string) => string = (t) => t, foreground = false): string {
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=licenses.example.com',
    '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
  const siteText = site(readFileSync(join(DEPLOY, 'nginx-tollgate.conf'), 'utf8'))
    .replace('/etc/letsencrypt/live/licenses.example.com/fullchain.pem', join(dir, 'cert.pem'))
    .replace('/etc/letsencrypt/live/licenses.example.com/privkey.pem', join(dir, 'key.pem'));
  expect(siteText).not.toContain('/etc/letsencrypt');
  const whole = readFileSync(join(DEPLOY, 'nginx.conf'), 'utf8');
  for (const directive of ['user www-data;', 'pid /run/nginx.pid;', 'error_log /var/log/nginx/error.log;', 'access_log /var/log/nginx/access.log;', 'include nginx-tollgate.conf;', 'http {']) {
    expect(whole, `deploy/nginx.conf no longer has ${directive}`).toContain(directive);
  }
  const wholeText = whole
    .replace(/^user www-data;$/m, foreground ? 'daemon off;\nmaster_process off;' : '')
    .replace('pid /run/nginx.pid;', `pid ${dir}/nginx.pid;`)
    .replace('error_log /var/log/nginx/error.log;', `error_log ${dir}/error.log;`)
    .replace('access_log /var/log/nginx/access.log;', 'access_log off;')
    .replace('http {', `http {\n    client_body_temp_path ${dir}/body;\n    proxy_temp_path ${dir}/proxy;`);
  writeFileSync(join(dir, 'nginx-tollgate.conf'), siteText);
  writeFileSync(join(dir, 'nginx.conf'), wholeText);
  return join(dir, 'nginx.conf');
}
