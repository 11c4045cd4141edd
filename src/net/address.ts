/**
 * Addresses as they arrive on the wire and in settings: one canonical text per
 * address, CIDR ranges, membership in a range list. The bottom layer
 * (docs/layers.md): config parses TRUST_PROXY with it, the domain keys bans and
 * limits on it, so it imports nothing of the project.
 */
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
export function ipv6Groups(address: string): number[] {
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
export function formatIpv6(groups: number[]): string {
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

