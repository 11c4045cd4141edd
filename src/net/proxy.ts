import { BlockList, isIP } from 'node:net';
import { addRange, canonicalIp, inList, ipv6Groups, normaliseIp, parseIpRange, type IpRange } from './address.js';

/**
 * TRUST_PROXY and X-Forwarded-For: which proxies are trusted and which client
 * a forwarded request is from. Bottom layer beside address.ts: config checks
 * TRUST_PROXY with it, http reads the client's address with it.
 */

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

