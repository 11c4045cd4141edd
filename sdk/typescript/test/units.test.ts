/**
 * The SDK's pieces without a server: app-data folders per OS, the hardware id
 * from each OS's machine id, the MAC'd state in two places, the lease store.
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { appDataFolders, FileLeaseStore, hardwareId, MemoryLeaseStore, osMachineId, type MachineIdSources } from '../src/index.js';
import { StateKeeper, freshState } from '../src/state.js';

describe('app-data folders', () => {
  const id = 'app-1';
  it('Windows: %APPDATA% and %LOCALAPPDATA%', () => {
    expect(appDataFolders(id, 'win32', { APPDATA: 'C:\\Users\\u\\AppData\\Roaming', LOCALAPPDATA: 'C:\\Users\\u\\AppData\\Local' }, 'C:\\Users\\u')).toEqual({
      data: 'C:\\Users\\u\\AppData\\Roaming\\tollgate\\app-1',
      state: 'C:\\Users\\u\\AppData\\Local\\tollgate\\app-1',
    });
  });
  it('macOS: ~/Library/Application Support and ~/Library/Preferences', () => {
    expect(appDataFolders(id, 'darwin', {}, '/Users/u')).toEqual({ data: '/Users/u/Library/Application Support/tollgate/app-1', state: '/Users/u/Library/Preferences/tollgate/app-1' });
  });
  it('Linux: $XDG_DATA_HOME (or ~/.local/share) and $XDG_STATE_HOME (or ~/.local/state)', () => {
    expect(appDataFolders(id, 'linux', {}, '/home/u')).toEqual({ data: '/home/u/.local/share/tollgate/app-1', state: '/home/u/.local/state/tollgate/app-1' });
    expect(appDataFolders(id, 'linux', { XDG_DATA_HOME: '/d', XDG_STATE_HOME: '/s' }, '/home/u')).toEqual({ data: '/d/tollgate/app-1', state: '/s/tollgate/app-1' });
  });
  it('refuses an app id that could climb out of the folder', () => {
    expect(() => appDataFolders('../../etc', 'linux', {}, '/home/u')).toThrow();
  });
});

describe('hardware id', () => {
  const sources = (platform: string, out: Record<string, string>): MachineIdSources => ({
    platform,
    readText: async (path) => {
      if (path in out) return out[path]!;
      throw Object.assign(new Error('ENOENT'), { code: 'ENOENT' });
    },
    exec: async (command, args) => out[[command, ...args].join(' ')] ?? '',
  });

  it('reads /etc/machine-id, else /var/lib/dbus/machine-id, on Linux', async () => {
    expect(await osMachineId(sources('linux', { '/etc/machine-id': 'abc123\n' }))).toBe('abc123');
    expect(await osMachineId(sources('linux', { '/var/lib/dbus/machine-id': 'def456\n' }))).toBe('def456');
  });
  it('reads IOPlatformUUID from ioreg on macOS', async () => {
    const ioreg = '+-o Root  <class IORegistryEntry>\n    "IOPlatformUUID" = "8A1B2C3D-0000-1111-2222-333344445555"\n';
    expect(await osMachineId(sources('darwin', { 'ioreg -rd1 -c IOPlatformExpertDevice': ioreg }))).toBe('8A1B2C3D-0000-1111-2222-333344445555');
  });
  it('reads MachineGuid from the registry on Windows', async () => {
    const reg = '\r\nHKEY_LOCAL_MACHINE\\SOFTWARE\\Microsoft\\Cryptography\r\n    MachineGuid    REG_SZ    0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\r\n';
    expect(await osMachineId(sources('win32', { 'reg query HKLM\\SOFTWARE\\Microsoft\\Cryptography /v MachineGuid': reg }))).toBe('0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0');
  });
  it('is hashed with the app id: stable per app, different between apps, never the raw id', async () => {
    const s = sources('linux', { '/etc/machine-id': 'abc123' });
    const a = await hardwareId('app-a', s);
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(await hardwareId('app-a', s)).toBe(a);
    expect(await hardwareId('app-b', s)).not.toBe(a);
  });
  it('says so when there is no machine id', async () => {
    await expect(osMachineId(sources('linux', {}))).rejects.toThrow(/pass your own hardwareId/);
  });
  it('works on this machine (Linux CI has /etc/machine-id)', async () => {
    expect(await hardwareId('app-a').catch(() => 'none')).toMatch(/^([0-9a-f]{64}|none)$/);
  });
});

describe('state in two places with a MAC', () => {
  it('round-trips; a MAC from another hardware id or app does not verify', async () => {
    const store = new MemoryLeaseStore();
    const state = { ...freshState(), highest_seq: 7, retired: ['k1'] };
    await new StateKeeper(store, 'app', 'hw').save(state);
    expect(await new StateKeeper(store, 'app', 'hw').load()).toEqual({ state, tampered: false });
    expect((await new StateKeeper(store, 'app', 'other-hw').load()).tampered).toBe(true);
    expect((await new StateKeeper(store, 'other-app', 'hw').load()).tampered).toBe(true);
  });
  it('two valid copies that disagree (one restored from an old backup) are tampering', async () => {
    const store = new MemoryLeaseStore();
    const keeper = new StateKeeper(store, 'app', 'hw');
    await keeper.save({ ...freshState(), highest_seq: 1 });
    const old = store.states[0];
    await keeper.save({ ...freshState(), highest_seq: 2 });
    store.states[1] = old;
    expect((await keeper.load()).tampered).toBe(true);
  });
  it('nothing at all and no lease is a first run, not tampering', async () => {
    expect(await new StateKeeper(new MemoryLeaseStore(), 'app', 'hw').load()).toEqual({ state: freshState(), tampered: false });
  });
});

describe('file lease store', () => {
  it('writes the lease and both copies under the folders given, readable by the user alone', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-sdk-store-'));
    try {
      const store = await FileLeaseStore.forApp('app', { data: join(dir, 'd'), state: join(dir, 's') });
      expect(await store.readLease()).toBeNull();
      await store.writeLease('LEASE');
      await store.writeState(0, 'A');
      await store.writeState(1, 'B');
      expect([await store.readLease(), await store.readState(0), await store.readState(1)]).toEqual(['LEASE', 'A', 'B']);
      expect(readFileSync(join(dir, 's', 'state.json'), 'utf8')).toBe('B');
      if (process.platform !== 'win32') expect(statSync(join(dir, 'd', 'lease.tollgate')).mode & 0o077).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
