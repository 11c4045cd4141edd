import type { AppRecord } from '../store/records.js';

/** Who is calling: the authenticated application, the client IP and the time of the request. */
export interface RequestContext {
  app: AppRecord;
  ip: string;
  now: number;
  /** The HTTP request's id, on the event lines so they meet the request's access line. */
  reqId?: string;
}
