/**
 * Where the SDK keeps the lease and its rollback state. Pluggable: an
 * Electron renderer or a sandboxed app passes its own; the default writes
 * files under the user's app-data folders (Node only, loaded lazily).
 */

/** Two state slots: the SDK writes the same MAC'd record to both and treats a disagreement as tampering. */
export type StateSlot = 0 | 1;

export interface LeaseStore {
  readLease(): Promise<string | null>;
  writeLease(file: string): Promise<void>;
  readState(slot: StateSlot): Promise<string | null>;
  writeState(slot: StateSlot, record: string): Promise<void>;
}

/** Keeps everything in memory: tests, or apps that must not touch the disk. */
export class MemoryLeaseStore implements LeaseStore {
  lease: string | null = null;
  readonly states: [string | null, string | null] = [null, null];
  async readLease(): Promise<string | null> {
    return this.lease;
  }
  async writeLease(file: string): Promise<void> {
    this.lease = file;
  }
  async readState(slot: StateSlot): Promise<string | null> {
    return this.states[slot];
  }
  async writeState(slot: StateSlot, record: string): Promise<void> {
    this.states[slot] = record;
  }
}

export interface Folders {
  /** The lease and the first state copy. */
  data: string;
  /** The second state copy, in another folder so one deleted folder does not take both. */
  state: string;
}

/**
 * The default folders for an app: %APPDATA% (and %LOCALAPPDATA%) on Windows,
 * ~/Library/Application Support (and ~/Library/Preferences) on macOS,
 * $XDG_DATA_HOME or ~/.local/share (and $XDG_STATE_HOME or ~/.local/state)
 * elsewhere; each under tollgate/<app_id>/.
 */
export function appDataFolders(appId: string, platform: string, env: Record<string, string | undefined>, home: string): Folders {
  if (!/^[A-Za-z0-9_-]{1,128}$/.test(appId)) throw new Error('app id: letters, digits, _ and - only'); // no path tricks
  const join = (...parts: string[]) => parts.join(platform === 'win32' ? '\\' : '/');
  const under = (base: string) => join(base, 'tollgate', appId);
  if (platform === 'win32') {
    const roaming = env.APPDATA ?? join(home, 'AppData', 'Roaming');
    return { data: under(roaming), state: under(env.LOCALAPPDATA ?? join(home, 'AppData', 'Local')) };
  }
  if (platform === 'darwin') return { data: under(join(home, 'Library', 'Application Support')), state: under(join(home, 'Library', 'Preferences')) };
  return { data: under(env.XDG_DATA_HOME || join(home, '.local', 'share')), state: under(env.XDG_STATE_HOME || join(home, '.local', 'state')) };
}

/** Files: <data>/lease.tollgate, <data>/state.json and <state>/state.json; written atomically (temp file, rename). */
export class FileLeaseStore implements LeaseStore {
  private constructor(readonly folders: Folders) {}

  /** The store in the user's app-data folders, or in the folders given. */
  static async forApp(appId: string, folders?: Folders): Promise<FileLeaseStore> {
    if (folders) return new FileLeaseStore(folders);
    const os = await import('node:os');
    return new FileLeaseStore(appDataFolders(appId, process.platform, process.env, os.homedir()));
  }

  private async path(folder: string, name: string): Promise<string> {
    const { join } = await import('node:path');
    return join(folder, name);
  }

  private async read(folder: string, name: string): Promise<string | null> {
    const { readFile } = await import('node:fs/promises');
    try {
      return await readFile(await this.path(folder, name), 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }

  private async write(folder: string, name: string, text: string): Promise<void> {
    const { mkdir, rename, writeFile } = await import('node:fs/promises');
    await mkdir(folder, { recursive: true, mode: 0o700 });
    const target = await this.path(folder, name);
    const temp = `${target}.${process.pid}.tmp`;
    // A crash mid-write leaves the old file whole: a half-written state would look like tampering.
    await writeFile(temp, text, { mode: 0o600 });
    await rename(temp, target);
  }

  readLease(): Promise<string | null> {
    return this.read(this.folders.data, 'lease.tollgate');
  }
  writeLease(file: string): Promise<void> {
    return this.write(this.folders.data, 'lease.tollgate', file);
  }
  readState(slot: StateSlot): Promise<string | null> {
    return this.read(slot === 0 ? this.folders.data : this.folders.state, 'state.json');
  }
  writeState(slot: StateSlot, record: string): Promise<void> {
    return this.write(slot === 0 ? this.folders.data : this.folders.state, 'state.json', record);
  }
}
