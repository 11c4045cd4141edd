import { BlockList } from 'node:net';
import type { BanRecord } from '../store/records.js';
import type { Store } from '../store/index.js';
import type { CacheEntry } from './cache.js';
import { addRange, inList, parseIpRange } from '../net/address.js';

/** The bans of one app in force at load time, indexed for the access checks. */
export class BanSet {
  private readonly ips = new BlockList();
  /** Each ban's value → its id (for the dashboard's ban-hit counts; the checks only ask whether one exists). */
  private readonly hardwareIds = new Map<string, string>();
  private readonly licenses = new Map<string, string>();
  private readonly users = new Map<string, string>();
  private readonly ipBans: { id: string; range: NonNullable<ReturnType<typeof parseIpRange>> }[] = [];
  /** Each ban's id → the operator's reason, for bans that have one (sent in signed refusals, docs/signing.md). */
  private readonly reasons = new Map<string, string>();
  private hasIps = false;

  constructor(bans: BanRecord[]) {
    for (const ban of bans) {
      if (ban.reason) this.reasons.set(ban.id, ban.reason);
      switch (ban.type) {
        case 'ip': {
          const range = parseIpRange(ban.value);
          if (range) {
            addRange(this.ips, range);
            this.ipBans.push({ id: ban.id, range });
            this.hasIps = true;
          }
          break;
        }
        case 'hardware_id':
          this.hardwareIds.set(ban.value, ban.id);
          break;
        case 'license':
          this.licenses.set(ban.value, ban.id);
          break;
        case 'user':
          this.users.set(ban.value, ban.id);
          break;
      }
    }
  }

  ip(ip: string): boolean {
    return this.hasIps && inList(this.ips, ip);
  }
  hardwareId(hwid: string | null | undefined): boolean {
    return hwid != null && this.hardwareIds.has(hwid);
  }
  license(code: string | null | undefined): boolean {
    return code != null && this.licenses.has(code);
  }
  user(userId: string): boolean {
    return this.users.has(userId);
  }

  /**
   * The id of the ban that refuses this value (only asked once a check said so; a refused request
   * is rare, so the IP ranges are searched one by one). Overlapping IP ranges: the narrowest.
   */
  idOf(type: BanRecord['type'], value: string): string | null {
    if (type === 'hardware_id') return this.hardwareIds.get(value) ?? null;
    if (type === 'license') return this.licenses.get(value) ?? null;
    if (type === 'user') return this.users.get(value) ?? null;
    let best: (typeof this.ipBans)[number] | null = null;
    for (const ban of this.ipBans) {
      const one = new BlockList();
      addRange(one, ban.range);
      if (inList(one, value) && (!best || ban.range.prefix > best.range.prefix)) best = ban;
    }
    return best?.id ?? null;
  }

  /** The operator's reason of the ban with this id, or null when it has none. */
  reasonOf(banId: string | null): string | null {
    return banId === null ? null : (this.reasons.get(banId) ?? null);
  }
}

/** The cache registry's loader (caches.ts): an app's bans in force now, kept until the earliest temporary one expires. */
export async function loadBans(store: Store, clock: () => number, appId: string): Promise<CacheEntry<BanSet>> {
  const now = clock();
  const bans = await store.bans.active(appId, now);
  let validUntil = Infinity;
  for (const b of bans) if (b.expiresAt !== null && b.expiresAt < validUntil) validUntil = b.expiresAt;
  return { value: new BanSet(bans), validUntil };
}
