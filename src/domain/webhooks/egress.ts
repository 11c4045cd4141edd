import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { addRange, canonicalIp, inList, parseIpRange } from '../../net/address.js';

/**
 * Where a webhook may be sent (SSRF). An endpoint is someone's URL, and the
 * node sending to it sits inside the operator's network: without a check, an
 * admin token (or a dashboard session) could make Tollgate POST to its own
 * database, a cloud metadata service or the office printer, and read 2 KiB of
 * each answer back in the delivery log. So: https only, and every address the
 * name resolves to must be public. Checked when the endpoint is saved and
 * again at every attempt (a name can be re-pointed), and the connection is
 * made to the address that was checked (no second lookup an attacker's DNS
 * could answer differently).
 */

/** Never reachable by a webhook, whatever the name resolves to (IANA special-purpose registries, cloud metadata). */
const BLOCKED = [
  '0.0.0.0/8', '10.0.0.0/8', '100.64.0.0/10', '127.0.0.0/8', '169.254.0.0/16', '172.16.0.0/12', '192.0.0.0/24', '192.0.2.0/24',
  '192.88.99.0/24', '192.168.0.0/16', '198.18.0.0/15', '198.51.100.0/24', '203.0.113.0/24', '224.0.0.0/4', '240.0.0.0/4',
  // Azure's platform address (wire server, metadata relay): public in form, never a receiver.
  '168.63.129.16/32',
  // ::/96 holds ::, ::1 and the deprecated IPv4-compatible form (::127.0.0.1); ::ffff:0:0:0/96 is SIIT's
  // IPv4-translated form (::ffff:0:127.0.0.1); fec0::/10 the deprecated site-local range: each reaches an IPv4
  // or internal host on a node with a translator.
  '::/96', '::ffff:0:0:0/96', 'fec0::/10', '64:ff9b::/96', '64:ff9b:1::/48', '100::/64', '2001::/23', '2001:db8::/32', '2002::/16', 'fc00::/7', 'fe80::/10', 'ff00::/8',
];

const blocked = new BlockList();
for (const r of BLOCKED) addRange(blocked, parseIpRange(r)!);

/** WEBHOOK_ALLOW_HOSTS: host names (exact, any case) and addresses or ranges exempt from the check, for development and tests. */
export class EgressPolicy {
  private readonly hosts = new Set<string>();
  private readonly ranges = new BlockList();

  constructor(entries: readonly string[]) {
    for (const entry of entries) {
      const range = parseIpRange(entry);
      if (range) addRange(this.ranges, range);
      else this.hosts.add(entry.toLowerCase());
    }
  }

  /** Parses the setting; an empty entry or a malformed one is the caller's error to report. */
  static valid(entry: string): boolean {
    return parseIpRange(entry) !== null || /^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/i.test(entry);
  }

  allowedHost(host: string): boolean {
    return this.hosts.has(host.toLowerCase());
  }

  allowedAddress(address: string): boolean {
    return inList(this.ranges, address);
  }
}

export interface Target {
  url: URL;
  /** The checked address the connection must go to. */
  address: string;
  family: 4 | 6;
}

export class EgressRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EgressRefused';
  }
}

/** A URL's syntax alone: what an endpoint may be saved with, before any lookup. */
export function parseEndpointUrl(raw: string, policy: EgressPolicy): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new EgressRefused('is not a URL');
  }
  const host = bareHost(url);
  if (url.username || url.password) throw new EgressRefused('must not carry a user name or password');
  if (url.protocol === 'http:') {
    if (!policy.allowedHost(host) && !(isIP(host) && policy.allowedAddress(canonicalIp(host) ?? host))) throw new EgressRefused('must be https');
  } else if (url.protocol !== 'https:') {
    throw new EgressRefused('must be https');
  }
  return url;
}

const bareHost = (url: URL): string => url.hostname.replace(/^\[|\]$/g, '');

/** Resolves the URL's host and checks every address; the first allowed one is the target. */
export async function resolveTarget(raw: string, policy: EgressPolicy, resolve: typeof lookup = lookup): Promise<Target> {
  const url = parseEndpointUrl(raw, policy);
  const host = bareHost(url);
  let addresses: { address: string; family: number }[];
  if (isIP(host)) {
    addresses = [{ address: host, family: isIP(host) }];
  } else {
    try {
      addresses = await resolve(host, { all: true, verbatim: true });
    } catch (err) {
      throw new EgressRefused(`its host does not resolve (${(err as NodeJS.ErrnoException).code ?? 'lookup failed'})`);
    }
    if (addresses.length === 0) throw new EgressRefused('its host does not resolve');
  }
  const hostAllowed = policy.allowedHost(host);
  // Every address is checked, not only the first: a name that resolves to one public and one private address
  // would otherwise reach the private one whenever the resolver's order changed.
  for (const a of addresses) {
    const address = canonicalIp(a.address) ?? a.address;
    if (!hostAllowed && !policy.allowedAddress(address) && isBlocked(address)) {
      throw new EgressRefused(`resolves to ${address}, a loopback, private, link-local, multicast or reserved address`);
    }
  }
  const first = addresses[0]!;
  return { url, address: canonicalIp(first.address) ?? first.address, family: isIP(canonicalIp(first.address) ?? first.address) === 6 ? 6 : 4 };
}

export function isBlocked(address: string): boolean {
  return inList(blocked, canonicalIp(address) ?? address);
}
