import type { FastifyInstance } from 'fastify';
import type { Services } from '../../../domain/services.js';
import { refuseNul, requireAdmin, strictJsonText, type AdminAuth } from '../../admin-plugin.js';
import { appRoutes } from './apps.js';
import { banRoutes } from './bans.js';
import { fileMetaRoutes, fileRoutes, variableRoutes } from './content.js';
import { keyRoutes } from './keys.js';
import { licenseRoutes } from './licenses.js';
import { operatorAccountRoutes } from './operator-accounts.js';
import { operatorRoutes } from './operators.js';
import { seatAdminRoutes } from './seats.js';
import { statsRoutes } from './stats.js';
import { entitlementRoutes, templateRoutes } from './templates.js';
import { userRoutes } from './users.js';
import { webhookRoutes } from './webhooks.js';

export interface AdminOptions extends AdminAuth {
  maxUploadBytes: number;
}

/** The operators' API under /admin/v1, every route behind an admin token or a dashboard session, and a role. */
export async function adminRoutes(app: FastifyInstance, opts: { services: Services } & AdminOptions): Promise<void> {
  const s = opts.services;
  requireAdmin(app, s, opts);
  strictJsonText(app);
  refuseNul(app);
  appRoutes(app, s);
  licenseRoutes(app, s);
  variableRoutes(app, s);
  banRoutes(app, s);
  keyRoutes(app, s);
  userRoutes(app, s);
  templateRoutes(app, s);
  entitlementRoutes(app, s);
  fileMetaRoutes(app, s);
  operatorRoutes(app, s);
  statsRoutes(app, s);
  seatAdminRoutes(app, s);
  webhookRoutes(app, s);
  operatorAccountRoutes(app, s, opts.sessionIdleSeconds);
  // Files register a raw-body parser, so they get an encapsulated scope of their own.
  await app.register(async (scope) => fileRoutes(scope, s, opts.maxUploadBytes));
}
