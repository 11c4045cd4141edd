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

/**
 * Never reachable by a webhook, whatever the name resolves to (IANA special-purpose registries, cloud metadata),
 * each range with the category a refusal names. Looked up most specific first: the metadata addresses sit inside
 * the link-local and unique-local ranges, and a refusal says `metadata` for them.
 */
export type AddressCategory = 'unspecified' | 'loopback' | 'private' | 'shared' | 'link-local' | 'metadata' | 'multicast' | 'reserved';
const BLOCKED: readonly (readonly [AddressCategory, readonly string[]])[] = [
  // 168.63.129.16: Azure's platform address (wire server, metadata relay), public in form, never a receiver.
  ['metadata', ['169.254.169.254/32', 'fd00:ec2::254/128', '168.63.129.16/32']],
  ['unspecified', ['0.0.0.0/8', '::/128']],
  ['loopback', ['127.0.0.0/8', '::1/128']],
  ['private', ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7']],
  ['shared', ['100.64.0.0/10']],
  ['link-local', ['169.254.0.0/16', 'fe80::/10']],
  ['multicast', ['224.0.0.0/4', 'ff00::/8']],
  ['reserved', [
    '192.0.0.0/24', '192.0.2.0/24', '192.88.99.0/24', '198.18.0.0/15', '198.51.100.0/24', '203.0.113.0/24', '240.0.0.0/4',
    '64:ff9b::/96', '64:ff9b:1::/48', '100::/64', '2001::/23', '2001:db8::/32', '2002::/16',
    // ::/96 (after :: and ::1 above) is the deprecated IPv4-compatible form (::127.0.0.1); ::ffff:0:0:0/96 is SIIT's
    // IPv4-translated form (::ffff:0:127.0.0.1); fec0::/10 the deprecated site-local range: each reaches an IPv4 or
    // internal host on a node with a translator.
    '::/96', '::ffff:0:0:0/96', 'fec0::/10',
  ]],
];

const blocked: [AddressCategory, BlockList][] = BLOCKED.map(([category, ranges]) => {
  const list = new BlockList();
  for (const r of ranges) addRange(list, parseIpRange(r)!);
  return [category, list];
});

/** What an address is to the check: the category of the first blocked range it is in, or null (public). */
function addressCategory(address: string): AddressCategory | null {
  const canonical = canonicalIp(address) ?? address;
  for (const [category, list] of blocked) if (inList(list, canonical)) return category;
  return null;
}

/** What a refusal names (each category once): the URL's syntax, its scheme, user info, a failed lookup, or an address's category. */
export type RefusalCategory = 'url' | 'scheme' | 'credentials' | 'unresolvable' | AddressCategory;

const DESCRIBED: Record<AddressCategory, string> = {
  unspecified: 'an unspecified address', loopback: 'a loopback address', private: 'a private address', shared: 'a shared address (CGNAT)',
  'link-local': 'a link-local address', metadata: 'a cloud metadata address', multicast: 'a multicast address', reserved: 'a reserved address',
};

/** A refusal's words for a blocked address: its category, and for a metadata address the range it sits in. */
function described(address: string, category: AddressCategory): string {
  if (category !== 'metadata') return DESCRIBED[category];
  const within = blocked.slice(1).find(([, list]) => inList(list, address))?.[0];
  return within === undefined ? DESCRIBED.metadata : `${DESCRIBED.metadata} (${within})`;
}

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
  /** Which check refused (docs/webhooks.md lists them). */
  constructor(message: string, readonly category: RefusalCategory) {
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
    throw new EgressRefused('is not a URL', 'url');
  }
  const host = bareHost(url);
  if (url.username || url.password) throw new EgressRefused('must not carry a user name or password', 'credentials');
  if (url.protocol === 'http:') {
    if (!policy.allowedHost(host) && !(isIP(host) && policy.allowedAddress(canonicalIp(host) ?? host))) throw new EgressRefused('must be https', 'scheme');
  } else if (url.protocol !== 'https:') {
    throw new EgressRefused('must be https', 'scheme');
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
      throw new EgressRefused(`its host does not resolve (${(err as NodeJS.ErrnoException).code ?? 'lookup failed'})`, 'unresolvable');
    }
    if (addresses.length === 0) throw new EgressRefused('its host does not resolve', 'unresolvable');
  }
  const hostAllowed = policy.allowedHost(host);
  // Every address is checked, not only the first: a name that resolves to one public and one private address
  // would otherwise reach the private one whenever the resolver's order changed.
  for (const a of addresses) {
    const address = canonicalIp(a.address) ?? a.address;
    const category = hostAllowed || policy.allowedAddress(address) ? null : addressCategory(address);
    if (category !== null) throw new EgressRefused(`resolves to ${address}, ${described(address, category)}`, category);
  }
  const first = addresses[0]!;
  return { url, address: canonicalIp(first.address) ?? first.address, family: isIP(canonicalIp(first.address) ?? first.address) === 6 ? 6 : 4 };
}
