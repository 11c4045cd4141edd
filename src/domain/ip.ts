import { isIP } from 'node:net';
import { canonicalIp, formatIpv6, ipv6Groups } from '../net/address.js';

// Parsing addresses, ranges and X-Forwarded-For is transport, in src/net/ (docs/layers.md); this is the limits' rule.

/**
 * The address a per-address rate limit counts: an IPv6 client as its /64
 * (`2001:db8:1:2::/64`), an IPv4 one as itself. One host, one VPS or one
 * home line gets a whole /64 and may send from any of its 2^64 addresses:
 * keyed by the full address, each would be a fresh bucket, and ten of them
 * would lock a stranger's username out (review finding 2). An IPv4-mapped
 * IPv6 address is its IPv4 address (canonicalIp), so it is not widened.
 */
export function limitAddress(ip: string): string {
  const canonical = canonicalIp(ip);
  if (canonical === null || isIP(canonical) !== 6) return canonical ?? ip;
  return `${formatIpv6([...ipv6Groups(canonical).slice(0, 4), 0, 0, 0, 0])}/64`;
}
