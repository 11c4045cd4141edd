import { BlockList, isIP } from 'node:net';

let lastRaw = '';
let lastNormalised = '';

/** A socket's address in canonical form; `::ffff:1.2.3.4` is the IPv4 client 1.2.3.4 on a dual-stack socket. */
export function normaliseIp(ip: string): string {
  // Consecutive requests mostly come from the same address (keep-alive connections): remember the last answer.
  if (ip === lastRaw) return lastNormalised;
  lastNormalised = canonicalIp(ip) ?? ip;
  lastRaw = ip;
  return lastNormalised;
}

/**
 * An address in one canonical text, or null if it is not an address: IPv4 as
 * a dotted quad without leading zeros, IPv6 lower-case and compressed
 * (RFC 5952), an IPv4-mapped IPv6 address as its IPv4 address. One address,
 * one text: IP history, rate-limit buckets and ban checks key on it, so
 * `2001:DB8:0::1` must not count apart from `2001:db8::1`. Zone ids are
 * refused: they name a local interface, never a remote client.
 */
export function canonicalIp(value: string): string | null {
  const version = isIP(value);
  if (version === 4) return value;
  if (version !== 6 || value.includes('%')) return null;
  const groups = ipv6Groups(value);
  return isMapped(groups) ? ipv4Of(groups) : formatIpv6(groups);
}

/** The eight 16-bit groups of a valid IPv6 address (`::` expanded, a trailing dotted quad converted). */
function ipv6Groups(address: string): number[] {
  const parse = (part: string): number[] =>
    part === '' ? [] : part.split(':').flatMap((g) => (g.includes('.') ? ipv4Groups(g) : [parseInt(g, 16)]));
  const [head = '', tail] = address.split('::');
  const left = parse(head);
  if (tail === undefined) return left;
  const right = parse(tail);
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}

function ipv4Groups(dotted: string): number[] {
  const [a = 0, b = 0, c = 0, d = 0] = dotted.split('.').map(Number);
  return [(a << 8) | b, (c << 8) | d];
}

const isMapped = (g: number[]): boolean => g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff;
const ipv4Of = (g: number[]): string => `${g[6]! >> 8}.${g[6]! & 255}.${g[7]! >> 8}.${g[7]! & 255}`;

/** RFC 5952: lower-case hex, no leading zeros, the longest run (the first of equals) of two or more zero groups as `::`. */
function formatIpv6(groups: number[]): string {
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart === -1) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLength).join(':')}`;
}

export interface IpRange {
  address: string;
  prefix: number;
  family: 'ipv4' | 'ipv6';
}

/** Parses an address or CIDR range (IPv4, IPv6, IPv4-mapped) into canonical form; null if it is neither. */
export function parseIpRange(value: string): IpRange | null {
  const [rawAddress, rawPrefix, ...rest] = value.trim().split('/');
  if (rest.length > 0 || !rawAddress) return null;
  const address = canonicalIp(rawAddress);
  if (address === null) return null;
  const max = isIP(rawAddress) === 4 ? 32 : 128;
  let prefix = max;
  if (rawPrefix !== undefined) {
    if (!/^\d{1,3}$/.test(rawPrefix)) return null;
    prefix = Number(rawPrefix);
    if (prefix > max) return null;
  }
  if (isIP(address) === 6) return { address, prefix, family: 'ipv6' };
  if (max === 32) return { address, prefix, family: 'ipv4' };
  // An IPv4-mapped IPv6 range is an IPv4 range; one wider than the mapped block is not.
  return prefix < 96 ? null : { address, prefix: prefix - 96, family: 'ipv4' };
}

export function addRange(list: BlockList, range: IpRange): void {
  const full = range.family === 'ipv4' ? 32 : 128;
  if (range.prefix === full) list.addAddress(range.address, range.family);
  else list.addSubnet(range.address, range.prefix, range.family);
}

export function inList(list: BlockList, ip: string): boolean {
  const family = isIP(ip);
  if (family === 0) return false;
  return list.check(ip, family === 4 ? 'ipv4' : 'ipv6');
}

/** The keywords TRUST_PROXY accepts besides addresses and ranges (the ranges proxy-addr gives them). */
const PROXY_RANGES: Record<string, string[]> = {
  loopback: ['127.0.0.0/8', '::1'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
  uniquelocal: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
};
export const PROXY_KEYWORDS: ReadonlySet<string> = new Set(Object.keys(PROXY_RANGES));

/** Whether a (canonical) address is one of the proxies whose X-Forwarded-For is honoured. */
export type ProxyTrust = (ip: string) => boolean;

/** The ranges TRUST_PROXY entries name (keywords expanded; what is not an address or range is skipped: config refuses it). */
function proxyRanges(entries: readonly string[]): IpRange[] {
  return entries.flatMap((entry) => (PROXY_RANGES[entry] ?? [entry]).map(parseIpRange).filter((r): r is IpRange => r !== null));
}

export function proxyTrust(entries: readonly string[]): ProxyTrust {
  const list = new BlockList();
  for (const range of proxyRanges(entries)) addRange(list, range);
  return (ip) => inList(list, ip);
}

const V4_SIZE = 1n << 32n;
const V6_TOP = (1n << 128n) - 1n;
/** Where IPv4 sits in the IPv6 space: BlockList matches an IPv4 address against IPv6 ranges as ::ffff:a.b.c.d. */
const MAPPED = 0xffffn << 32n;

function rangeBounds(range: IpRange): [bigint, bigint] {
  const bits = range.family === 'ipv4' ? 32 : 128;
  const value = range.family === 'ipv4'
    ? range.address.split('.').reduce((n, octet) => (n << 8n) | BigInt(octet), 0n)
    : ipv6Groups(range.address).reduce((n, group) => (n << 16n) | BigInt(group), 0n);
  const size = 1n << BigInt(bits - range.prefix);
  const start = value - (value % size);
  return [start, start + size - 1n];
}

/** Whether the union of [start, end] intervals covers 0..top. */
function covers(intervals: [bigint, bigint][], top: bigint): boolean {
  let next = 0n;
  for (const [start, end] of intervals.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))) {
    if (start > next) return false;
    if (end + 1n > next) next = end + 1n;
  }
  return next > top;
}

/**
 * The address families (`IPv4`, `IPv6`) every address of which these
 * TRUST_PROXY entries trust, as the proxy check matches them: an IPv6 range
 * holding ::ffff:0:0/96 (`::/8`, `::/80`) trusts every IPv4 client, and
 * ranges may cover a family in pieces (`0.0.0.0/1,128.0.0.0/1`).
 */
export function familiesTrusted(entries: readonly string[]): ('IPv4' | 'IPv6')[] {
  const v4: [bigint, bigint][] = [];
  const v6: [bigint, bigint][] = [];
  for (const range of proxyRanges(entries)) {
    const [start, end] = rangeBounds(range);
    if (range.family === 'ipv4') {
      v4.push([start, end]);
      v6.push([MAPPED + start, MAPPED + end]);
    } else {
      v6.push([start, end]);
      const low = start > MAPPED ? start : MAPPED;
      const high = end < MAPPED + V4_SIZE - 1n ? end : MAPPED + V4_SIZE - 1n;
      if (low <= high) v4.push([low - MAPPED, high - MAPPED]);
    }
  }
  const families: ('IPv4' | 'IPv6')[] = [];
  if (covers(v4, V4_SIZE - 1n)) families.push('IPv4');
  if (covers(v6, V6_TOP)) families.push('IPv6');
  return families;
}

/**
 * One X-Forwarded-For entry as an address: `1.2.3.4`, `2001:db8::1`,
 * `1.2.3.4:port`, `[2001:db8::1]` and `[2001:db8::1]:port` (proxies that add
 * the client's port or bracket IPv6). The unspecified addresses and anything
 * else are null: a value that is
 * not an address must never stand for a client (it would match no ban and
 * open a rate-limit bucket of its own).
 */
export function forwardedAddress(entry: string): string | null {
  const value = entry.trim();
  const bracketed = /^\[([^\]]*)\](?::(\d{1,5}))?$/.exec(value);
  const withPort = bracketed ? null : /^([\d.]+):(\d{1,5})$/.exec(value);
  const address = bracketed
    ? (validPort(bracketed[2]) ? canonicalIp(bracketed[1]!) : null)
    : withPort
      ? (validPort(withPort[2]) && isIP(withPort[1]!) === 4 ? withPort[1]! : null)
      : canonicalIp(value);
  // 0.0.0.0 and :: mean "no address": never a packet's source, so never a client (a placeholder or a forgery).
  return address === '0.0.0.0' || address === '::' ? null : address;
}

const validPort = (port: string | undefined): boolean => port === undefined || Number(port) <= 65535;

/**
 * The client's address: the socket's, or, when the socket is a trusted proxy,
 * X-Forwarded-For read from the right up to the first hop that is not a
 * trusted proxy (entries left of it were written by the client and prove
 * nothing). Null when a hop that must be read is not an address: the request
 * is refused rather than charged to a made-up or borrowed address.
 */
export function clientAddress(socketAddress: string | undefined, forwardedHeader: string | string[] | undefined, trusted: ProxyTrust | null): string | null {
  if (socketAddress === undefined) return null;
  const forwardedFor = Array.isArray(forwardedHeader) ? forwardedHeader.join(',') : forwardedHeader;
  let address = normaliseIp(socketAddress);
  if (trusted === null || forwardedFor === undefined || !trusted(address)) return address;
  const hops = forwardedFor.split(',');
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = forwardedAddress(hops[i]!);
    if (hop === null) return null;
    address = hop;
    if (!trusted(address)) return address;
  }
  return address;
}

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
