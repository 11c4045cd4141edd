import type { LicenseRecord } from '../../store/records.js';
import { viewLicense } from '../admin/licenses.js';

/**
 * A license in the events that follow its creation: without its code, which
 * signs in a license-code account (only license.created carries codes, to the
 * app's own endpoints, so a vendor's mailer can send them: docs/decisions.md).
 */
export function licenseData(l: LicenseRecord): Record<string, unknown> {
  const { code: _code, ...rest } = viewLicense(l);
  return rest;
}
