import type { Provider } from '../../store/repositories/sales.js';
import { DomainError } from '../errors.js';
import type { Services } from '../services.js';
import { UnsealError } from '../signing/seal.js';
import { applySale, type SaleAnswer } from './apply.js';
import { parseEvent } from './parse.js';
import { openSecret } from './secrets.js';
import { SIGNATURE_HEADER, verifySignature, type SignatureProblem } from './verify.js';

const WHY: Record<SignatureProblem | 'unconfigured', string> = {
  missing: 'The webhook carries no signature header',
  malformed: 'The webhook signature header is malformed',
  stale: 'The webhook signature timestamp is outside the tolerance; the store re-signs each delivery',
  mismatch: 'The webhook signature does not match the signing secret',
  // The same 401 as a wrong signature: a caller learns nothing about which apps exist or sell through which store.
  unconfigured: 'The webhook signature does not match the signing secret',
};

/**
 * POST /integrations/{provider}/{app_id}: the raw body is verified with the app's secret for that store,
 * then parsed and applied. Unsigned, stale or mis-signed: 401 invalid_signature, and nothing is stored.
 */
export async function receiveSale(s: Services, provider: Provider, appId: string, headers: Record<string, string | string[] | undefined>, raw: Buffer): Promise<SaleAnswer> {
  const integration = await s.store.sales.findIntegration(appId, provider);
  const header = headers[SIGNATURE_HEADER[provider]];
  const signature = Array.isArray(header) ? header.join(',') : header;
  let problem: SignatureProblem | 'unconfigured';
  if (!integration || !integration.enabled) problem = 'unconfigured';
  else {
    let secret: string;
    try {
      secret = openSecret(s.seal, appId, provider, integration.signingSecret);
    } catch (err) {
      if (!(err instanceof UnsealError)) throw err;
      // The store retries a 503: once the node has its KEK, the delivery goes through.
      s.log.error({ event: 'integration_secret_sealed', appId, provider, cause: err.message }, 'a store signing secret cannot be unsealed on this node');
      throw new DomainError('service_unavailable', 'This node cannot open the signing secret; the operator must give it SIGNING_KEY_SEAL');
    }
    const found = verifySignature(provider, signature, secret, raw, s.clock());
    if (found === null) return applySale(s, appId, provider, parseEvent(provider, parseJson(raw)));
    problem = found;
  }
  s.log.info({ event: 'sale_refused', appId, provider, reason: problem }, 'sale webhook refused');
  throw new DomainError('invalid_signature', WHY[problem]);
}

function parseJson(raw: Buffer): unknown {
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    throw new DomainError('validation_error', 'Invalid request: the body is not valid JSON', [{ field: 'body', message: 'is not valid JSON' }]);
  }
}
