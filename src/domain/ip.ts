import { BlockList, isIP } from 'node:net';

let lastRaw = '';
let lastNormalised = '';

/** `::ffff:1.2.3.4` is the IPv4 client 1.2.3.4 on a dual-stack socket; treat it as such everywhere. */
export function normaliseIp(ip: string): string {
  // Consecutive requests mostly come from the same address (keep-alive connections): remember the last answer.
  if (ip === lastRaw) return lastNormalised;
  lastNormalised = normalise(ip);
  lastRaw = ip;
  return lastNormalised;
}

function normalise(ip: string): string {
  const lower = ip.toLowerCase();
  if (lower.startsWith('::ffff:') && isIP(lower.slice(7)) === 4) return lower.slice(7);
  return isIP(lower) === 6 ? lower : ip;
}

export interface IpRange {
  address: string;
  prefix: number;
  family: 'ipv4' | 'ipv6';
}

/** Parses an address or CIDR range (IPv4, IPv6, IPv4-mapped); null if it is neither. */
export function parseIpRange(value: string): IpRange | null {
  const [rawAddress, rawPrefix, ...rest] = value.trim().split('/');
  if (rest.length > 0 || !rawAddress) return null;
  let address = rawAddress.toLowerCase();
  let version = isIP(address);
  if (version === 0) return null;
  let max = version === 4 ? 32 : 128;
  let prefix = max;
  if (rawPrefix !== undefined) {
    if (!/^\d{1,3}$/.test(rawPrefix)) return null;
    prefix = Number(rawPrefix);
    if (prefix > max) return null;
  }
  if (version === 6 && address.startsWith('::ffff:') && isIP(address.slice(7)) === 4) {
    if (prefix < 96) return null; // a range wider than the mapped block is not an IPv4 range
    address = address.slice(7);
    prefix -= 96;
    version = 4;
    max = 32;
  }
  return { address, prefix, family: version === 4 ? 'ipv4' : 'ipv6' };
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
