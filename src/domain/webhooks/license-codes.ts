import type { EndpointRecord } from '../../store/repositories/webhooks.js';

/**
 * What each endpoint is sent of an event. A license code redeems: it is a credential. `license.created`
 * carries the batch's codes so that the app's own mailer (a standard endpoint of that app) can send them
 * to the buyer; nothing else needs them. A Discord channel is read by more people than a mailer, and a
 * service-wide endpoint hears every app's events, so neither gets a code (docs/decisions.md).
 */

/** Whether this endpoint gets license codes: a standard endpoint of one app. */
export const getsLicenseCodes = (endpoint: Pick<EndpointRecord, 'kind' | 'appId'>): boolean => endpoint.kind === 'standard' && endpoint.appId !== null;

/** A `license.*` event's data without its codes (`code`, `codes`, and each of `licenses[]`'s and `license`'s `code`). */
export function withoutLicenseCodes(type: string, data: Record<string, unknown>): Record<string, unknown> {
  if (!type.startsWith('license.')) return data;
  const strip = (v: unknown): unknown => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    const { code: _code, ...rest } = v as Record<string, unknown>;
    return rest;
  };
  const { code: _code, codes: _codes, ...rest } = data;
  if (Array.isArray(rest.licenses)) rest.licenses = rest.licenses.map(strip);
  if (rest.license !== undefined) rest.license = strip(rest.license);
  return rest;
}
