import { iso } from './membership.js';
import type { RequestContext } from './access.js';
import type { Services } from './services.js';
import { authenticateUser, type UserCredentials } from './user-auth.js';
import { viewUser } from './users.js';

/**
 * GET /app_context, as a ready JSON string: the application part is
 * serialised once per change (cached), only the user and the time are per call.
 */
export async function appContextJson(s: Services, ctx: RequestContext, creds: UserCredentials): Promise<string> {
  const user = await authenticateUser(s, ctx, creds);
  const application = await s.caches.applications.get(ctx.app.id);
  const userJson = user ? JSON.stringify(viewUser(user, ctx.now)) : 'null';
  return `{"application":${application.json},"user":${userJson},"server_time":"${iso(ctx.now)}"}`;
}
