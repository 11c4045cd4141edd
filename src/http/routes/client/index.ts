import type { FastifyInstance } from 'fastify';
import type { Services } from '../../../domain/services.js';
import type { Downloads } from '../../downloads.js';
import { requireApp } from '../../client-plugin.js';
import { signAnswers } from '../../signing.js';
import { accountRoutes } from './accounts.js';
import { contextRoutes } from './context.js';
import { fileRoutes } from './files.js';
import { leaseRoutes } from './lease.js';
import { keyListRoutes } from './keys.js';
import { redeemRoutes } from './redeem.js';
import { seatRoutes } from './seats.js';
import { sessionRoutes } from './sessions.js';
import { trialRoutes } from './trial.js';

/** The client interface of SPEC.md, every route behind the application headers. */
export async function clientRoutes(app: FastifyInstance, s: Services, downloads: Downloads): Promise<void> {
  requireApp(app, s);
  signAnswers(app, s);
  accountRoutes(app, s);
  sessionRoutes(app, s);
  trialRoutes(app, s);
  contextRoutes(app, s);
  fileRoutes(app, s, downloads);
  leaseRoutes(app, s);
  keyListRoutes(app, s);
  seatRoutes(app, s);
  redeemRoutes(app, s);
}
