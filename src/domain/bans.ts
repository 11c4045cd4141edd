import { BlockList } from 'node:net';
import type { BanRecord } from '../store/records.js';
import type { Store } from '../store/index.js';
import { InvalidatingCache } from './cache.js';
import { addRange, inList, parseIpRange } from './ip.js';

/** The bans of one app in force at load time, indexed for the access checks. */
export class BanSet {
  private readonly ips = new BlockList();
  private readonly hardwareIds = new Set<string>();
  private readonly licenses = new Set<string>();
  private readonly users = new Set<string>();
  private hasIps = false;

  constructor(bans: BanRecord[]) {
    for (const ban of bans) {
      switch (ban.type) {
        case 'ip': {
          const range = parseIpRange(ban.value);
          if (range) {
            addRange(this.ips, range);
            this.hasIps = true;
          }
          break;
        }
        case 'hardware_id':
          this.hardwareIds.add(ban.value);
          break;
        case 'license':
          this.licenses.add(ban.value);
          break;
        case 'user':
          this.users.add(ban.value);
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
}

/** Bans per app, reloaded on any ban write and when the earliest temporary ban expires. */
export function banCache(store: Store, clock: () => number, ttlMs?: number): InvalidatingCache<BanSet> {
  return new InvalidatingCache<BanSet>(
    async (appId) => {
      const now = clock();
      const bans = await store.bans.active(appId, now);
      let validUntil = Infinity;
      for (const b of bans) if (b.expiresAt !== null && b.expiresAt < validUntil) validUntil = b.expiresAt;
      return { value: new BanSet(bans), validUntil };
    },
    clock,
    { ttlMs },
  );
}
