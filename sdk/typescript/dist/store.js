/**
 * Where the SDK keeps the lease and its rollback state. Pluggable: an
 * Electron renderer or a sandboxed app passes its own; the default writes
 * files under the user's app-data folders (Node only, loaded lazily).
 */
/** A promise-chain mutex: callers run one after the other, in order. */
export class Mutex {
    tail = Promise.resolve();
    run(fn) {
        const result = this.tail.then(fn, fn);
        this.tail = result.catch(() => undefined);
        return result;
    }
}
/** Keeps everything in memory: tests, or apps that must not touch the disk. Share one between clients to share state. */
export class MemoryLeaseStore {
    lease = null;
    states = [null, null];
    mutex = new Mutex();
    lock(fn) {
        return this.mutex.run(fn);
    }
    async readLease() {
        return this.lease;
    }
    async writeLease(file) {
        this.lease = file;
    }
    async readState(slot) {
        return this.states[slot];
    }
    async writeState(slot, record) {
        this.states[slot] = record;
    }
}
/**
 * The default folders for an app: %APPDATA% (and %LOCALAPPDATA%) on Windows,
 * ~/Library/Application Support (and ~/Library/Preferences) on macOS,
 * $XDG_DATA_HOME or ~/.local/share (and $XDG_STATE_HOME or ~/.local/state)
 * elsewhere; each under tollgate/<app_id>/.
 */
export function appDataFolders(appId, platform, env, home) {
    if (!/^[A-Za-z0-9_-]{1,128}$/.test(appId))
        throw new Error('app id: letters, digits, _ and - only'); // no path tricks
    const join = (...parts) => parts.join(platform === 'win32' ? '\\' : '/');
    const under = (base) => join(base, 'tollgate', appId);
    if (platform === 'win32') {
        const roaming = env.APPDATA ?? join(home, 'AppData', 'Roaming');
        return { data: under(roaming), state: under(env.LOCALAPPDATA ?? join(home, 'AppData', 'Local')) };
    }
    if (platform === 'darwin')
        return { data: under(join(home, 'Library', 'Application Support')), state: under(join(home, 'Library', 'Preferences')) };
    return { data: under(env.XDG_DATA_HOME || join(home, '.local', 'share')), state: under(env.XDG_STATE_HOME || join(home, '.local', 'state')) };
}
/** A lock file older than this was left by a crashed process and is taken over. */
export const LOCK_STALE_MS = 10_000;
/** How long to wait for the lock before taking it over anyway: a stuck holder must not freeze the app. */
export const LOCK_WAIT_MS = 15_000;
/**
 * Files: <data>/lease.tollgate, <data>/state.json and <state>/state.json; written atomically (temp file, rename).
 * The lock is <data>/state.lock, created exclusively and removed on release: the same file and rules as the
 * other Tollgate SDKs, so instances of one app in different languages also take turns.
 */
export class FileLeaseStore {
    folders;
    local = new Mutex();
    constructor(folders) {
        this.folders = folders;
    }
    lock(fn) {
        // This process's callers queue here; the lock file orders them with other processes.
        return this.local.run(async () => {
            const release = await this.acquire();
            try {
                return await fn();
            }
            finally {
                await release();
            }
        });
    }
    async acquire() {
        const { mkdir, open, stat, unlink } = await import('node:fs/promises');
        await mkdir(this.folders.data, { recursive: true, mode: 0o700 });
        const file = await this.path(this.folders.data, 'state.lock');
        const deadline = Date.now() + LOCK_WAIT_MS;
        for (let wait = 2;; wait = Math.min(wait * 2, 50)) {
            try {
                const handle = await open(file, 'wx', 0o600);
                await handle.writeFile(`${process.pid}\n`);
                await handle.close();
                return () => unlink(file).catch(() => undefined);
            }
            catch (err) {
                if (err.code !== 'EEXIST')
                    throw err;
            }
            const age = await stat(file).then((st) => Date.now() - st.mtimeMs, () => 0);
            if (age > LOCK_STALE_MS || Date.now() > deadline) {
                await unlink(file).catch(() => undefined);
                continue;
            }
            await new Promise((r) => setTimeout(r, wait));
        }
    }
    /** The store in the user's app-data folders, or in the folders given. */
    static async forApp(appId, folders) {
        if (folders)
            return new FileLeaseStore(folders);
        const os = await import('node:os');
        return new FileLeaseStore(appDataFolders(appId, process.platform, process.env, os.homedir()));
    }
    async path(folder, name) {
        const { join } = await import('node:path');
        return join(folder, name);
    }
    async read(folder, name) {
        const { readFile } = await import('node:fs/promises');
        try {
            return await readFile(await this.path(folder, name), 'utf8');
        }
        catch (err) {
            if (err.code === 'ENOENT')
                return null;
            throw err;
        }
    }
    async write(folder, name, text) {
        const { mkdir, rename, writeFile } = await import('node:fs/promises');
        await mkdir(folder, { recursive: true, mode: 0o700 });
        const target = await this.path(folder, name);
        // Unique per writer: two instances in one process (same pid) must not share a temp file.
        const temp = `${target}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
        // A crash mid-write leaves the old file whole: a half-written state would look like tampering.
        await writeFile(temp, text, { mode: 0o600 });
        await rename(temp, target);
    }
    readLease() {
        return this.read(this.folders.data, 'lease.tollgate');
    }
    writeLease(file) {
        return this.write(this.folders.data, 'lease.tollgate', file);
    }
    readState(slot) {
        return this.read(slot === 0 ? this.folders.data : this.folders.state, 'state.json');
    }
    writeState(slot, record) {
        return this.write(slot === 0 ? this.folders.data : this.folders.state, 'state.json', record);
    }
}
//# sourceMappingURL=store.js.map