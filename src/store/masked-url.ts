// Apart from postgres-errors.ts so that printing a URL does not load the PostgreSQL driver:
// every CLI command names its database, and `pg` alone costs ~80 ms of each start.

/**
 * A database URL as it may be printed (logs, 503 causes, start-up lines): the password replaced, in
 * the user part and in any password-like query parameter (`?password=`, `sslpassword=`), which the
 * driver accepts too. The one masking function: everything that prints a database URL uses it.
 */
export function maskedUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    for (const key of [...u.searchParams.keys()]) if (/pass/i.test(key)) u.searchParams.set(key, '***');
    return u.toString();
  } catch {
    return url.replace(/:[^:@/]*@/, ':***@').replace(/([?&][^=&]*pass[^=&]*=)[^&]*/gi, '$1***');
  }
}
