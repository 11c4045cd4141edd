import type { EndpointRecord } from '../../store/repositories/webhooks.js';

/**
 * What each endpoint is sent of an event. Two fields are for the app's own systems only:
 * - a license code redeems: it is a credential. `license.created` carries the batch's codes so that the app's
 *   own mailer (a standard endpoint of that app) can send them to the buyer; nothing else needs them;
 * - a variable's value is what the app hands its licensed users (a download key, a server address): a vendor's
 *   own CRM may mirror it, an operator's monitoring or a chat channel has no use for it.
 * A Discord channel is read by more people than a mailer, and a service-wide endpoint hears every app's events,
 * so neither gets them (docs/decisions.md, "License codes go to the app's own standard endpoints only" and
 * "Variable values stay with the app's own endpoints").
 */

/** Whether this endpoint gets the withheld fields: a standard endpoint of one app. */
export const getsWithheld = (endpoint: Pick<EndpointRecord, 'kind' | 'appId'>): boolean => endpoint.kind === 'standard' && endpoint.appId !== null;

/**
 * An event's data without the withheld fields: a `license.*` event's codes (`code`, `codes`, and each of
 * `licenses[]`'s and `license`'s `code`), a `variable.updated` event's `value`. Other events as they are.
 */
export function withoutWithheld(type: string, data: Record<string, unknown>): Record<string, unknown> {
  if (type === 'variable.updated') {
    const { value: _value, ...rest } = data;
    return rest;
  }
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
