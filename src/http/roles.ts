import type { Permission } from '../domain/admin/roles.js';

/**
 * Every admin route, by method and route pattern, and the one permission it
 * needs (src/domain/admin/roles.ts says which roles hold which). The admin
 * hook refuses a route that is not here, whoever calls it: a new route is
 * closed until someone decides who may use it, and test/roles.test.ts walks
 * every registered admin route to prove it is listed. 'public' is only the
 * sign-in itself.
 */
export const ROUTE_PERMISSIONS: Readonly<Record<string, Permission | 'public'>> = {
  // Sessions and who am I
  'POST /admin/v1/session': 'public',
  'GET /admin/v1/session': 'self',
  'DELETE /admin/v1/session': 'self',
  'POST /admin/v1/session/totp': 'self',
  'POST /admin/v1/session/totp/confirm': 'self',
  'DELETE /admin/v1/session/totp': 'self',
  'GET /admin/v1/whoami': 'self',

  // Operators: owner only, reading included (usernames and who holds which role)
  'GET /admin/v1/operators': 'operators',
  'POST /admin/v1/operators': 'operators',
  'PATCH /admin/v1/operators/:operator_id': 'operators',
  'DELETE /admin/v1/operators/:operator_id': 'operators',
  'POST /admin/v1/operators/:operator_id/reset_totp': 'operators',

  // Apps
  'GET /admin/v1/apps': 'read',
  'POST /admin/v1/apps': 'apps',
  'GET /admin/v1/apps/:app_id': 'read',
  'PATCH /admin/v1/apps/:app_id': 'apps',
  'DELETE /admin/v1/apps/:app_id': 'apps',
  'POST /admin/v1/apps/:app_id/secret': 'apps',
  'GET /admin/v1/apps/:app_id/stats': 'read',

  // Licenses
  'GET /admin/v1/apps/:app_id/licenses': 'read',
  'POST /admin/v1/apps/:app_id/licenses': 'licenses',
  'GET /admin/v1/apps/:app_id/licenses/export': 'read',
  'GET /admin/v1/apps/:app_id/licenses/export.csv': 'read',
  'POST /admin/v1/apps/:app_id/licenses/delete_unused': 'licenses',
  'GET /admin/v1/apps/:app_id/licenses/:license_id': 'read',
  'DELETE /admin/v1/apps/:app_id/licenses/:license_id': 'licenses',

  // License templates (issue 24): made and changed by whoever makes licenses
  'GET /admin/v1/apps/:app_id/templates': 'read',
  'POST /admin/v1/apps/:app_id/templates': 'licenses',
  'GET /admin/v1/apps/:app_id/templates/:template_id': 'read',
  'PATCH /admin/v1/apps/:app_id/templates/:template_id': 'licenses',
  'DELETE /admin/v1/apps/:app_id/templates/:template_id': 'licenses',
  'POST /admin/v1/apps/:app_id/templates/:template_id/apply': 'licenses',

  // Entitlements granted directly, and trials (issue 24): acting on users
  'POST /admin/v1/apps/:app_id/users/:user_id/entitlements': 'users',
  'DELETE /admin/v1/apps/:app_id/users/:user_id/entitlements/:code': 'users',
  'GET /admin/v1/apps/:app_id/trials': 'read',
  'DELETE /admin/v1/apps/:app_id/trials/:trial_id': 'users',

  // Users
  'GET /admin/v1/apps/:app_id/users': 'read',
  'GET /admin/v1/apps/:app_id/users/:user_id': 'read',
  'PATCH /admin/v1/apps/:app_id/users/:user_id': 'users',
  'POST /admin/v1/apps/:app_id/users/:user_id/reset-devices': 'users',
  'POST /admin/v1/apps/:app_id/users/:user_id/revoke-sessions': 'users',
  'DELETE /admin/v1/apps/:app_id/users/:user_id': 'delete_users',

  // Floating seats (releasing one frees a place, as resetting devices does)
  'GET /admin/v1/apps/:app_id/seats': 'read',
  'GET /admin/v1/apps/:app_id/users/:user_id/seats': 'read',
  'DELETE /admin/v1/apps/:app_id/seats/:seat_id': 'users',

  // Bans
  'GET /admin/v1/apps/:app_id/bans': 'read',
  'POST /admin/v1/apps/:app_id/bans': 'bans',
  'DELETE /admin/v1/apps/:app_id/bans/:ban_id': 'bans',

  // Variables and files
  'GET /admin/v1/apps/:app_id/variables': 'read',
  'GET /admin/v1/apps/:app_id/variables/:name': 'read',
  'PUT /admin/v1/apps/:app_id/variables/:name': 'content',
  'DELETE /admin/v1/apps/:app_id/variables/:name': 'content',
  'GET /admin/v1/apps/:app_id/files': 'read',
  'POST /admin/v1/apps/:app_id/files': 'content',
  'GET /admin/v1/apps/:app_id/files/:file_id': 'read',
  'PATCH /admin/v1/apps/:app_id/files/:file_id': 'content',
  'DELETE /admin/v1/apps/:app_id/files/:file_id': 'content',
  'PUT /admin/v1/apps/:app_id/files/:file_id/content': 'content',

  // Signing keys (public halves and certificates are readable; acting on them is the owner's)
  'GET /admin/v1/apps/:app_id/root-key': 'read',
  'PUT /admin/v1/apps/:app_id/root-key': 'keys',
  'GET /admin/v1/apps/:app_id/signing-keys': 'read',
  'POST /admin/v1/apps/:app_id/signing-keys': 'keys',
  'GET /admin/v1/apps/:app_id/signing-keys/:kid': 'read',
  'PUT /admin/v1/apps/:app_id/signing-keys/:kid/certificate': 'keys',
  'POST /admin/v1/apps/:app_id/signing-keys/:kid/retire': 'keys',

  // Admin tokens and the audit log
  'GET /admin/v1/tokens': 'read',
  'POST /admin/v1/tokens': 'tokens',
  'DELETE /admin/v1/tokens/:token_id': 'tokens',
  'GET /admin/v1/audit': 'read',

  // Webhooks and the event outbox (an endpoint is app configuration: changing one is the apps permission)
  'GET /admin/v1/apps/:app_id/webhooks': 'read',
  'POST /admin/v1/apps/:app_id/webhooks': 'apps',
  'GET /admin/v1/apps/:app_id/webhooks/:endpoint_id': 'read',
  'PATCH /admin/v1/apps/:app_id/webhooks/:endpoint_id': 'apps',
  'DELETE /admin/v1/apps/:app_id/webhooks/:endpoint_id': 'apps',
  'POST /admin/v1/apps/:app_id/webhooks/:endpoint_id/secret': 'apps',
  'POST /admin/v1/apps/:app_id/webhooks/:endpoint_id/test': 'apps',
  'GET /admin/v1/apps/:app_id/webhooks/:endpoint_id/deliveries': 'read',
  'POST /admin/v1/apps/:app_id/webhooks/:endpoint_id/deliveries/:delivery_id/replay': 'apps',
  'POST /admin/v1/apps/:app_id/webhooks/:endpoint_id/replay': 'apps',
  'GET /admin/v1/webhooks': 'read',
  'POST /admin/v1/webhooks': 'apps',
  'GET /admin/v1/webhooks/:endpoint_id': 'read',
  'PATCH /admin/v1/webhooks/:endpoint_id': 'apps',
  'DELETE /admin/v1/webhooks/:endpoint_id': 'apps',
  'POST /admin/v1/webhooks/:endpoint_id/secret': 'apps',
  'POST /admin/v1/webhooks/:endpoint_id/test': 'apps',
  'GET /admin/v1/webhooks/:endpoint_id/deliveries': 'read',
  'POST /admin/v1/webhooks/:endpoint_id/deliveries/:delivery_id/replay': 'apps',
  'POST /admin/v1/webhooks/:endpoint_id/replay': 'apps',
  'GET /admin/v1/apps/:app_id/webhook-key': 'read',
  'GET /admin/v1/webhook-key': 'read',
  'GET /admin/v1/events': 'read',
};

/** The permission a request's route needs; HEAD is the GET it mirrors. Undefined: not in the table, refused. */
export function permissionOf(method: string, routeUrl: string | undefined): Permission | 'public' | undefined {
  if (routeUrl === undefined) return undefined;
  const key = `${method === 'HEAD' ? 'GET' : method} ${routeUrl}`;
  return Object.hasOwn(ROUTE_PERMISSIONS, key) ? ROUTE_PERMISSIONS[key] : undefined;
}
