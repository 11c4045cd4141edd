/**
 * A hardware id for device locking and leases: the OS machine id, hashed
 * with the app id so two apps on one machine (or two vendors) never see the
 * same value and the raw machine id never leaves the machine. Apps may use
 * their own id instead; this one changes when the OS is reinstalled.
 */
import { sha256Hex } from './crypto.js';
async function nodeSources() {
    const [{ readFile }, { execFile }] = await Promise.all([import('node:fs/promises'), import('node:child_process')]);
    return {
        platform: process.platform,
        readText: (path) => readFile(path, 'utf8'),
        exec: (command, args) => new Promise((resolve, reject) => execFile(command, args, { timeout: 5000, windowsHide: true }, (err, stdout) => (err ? reject(err) : resolve(String(stdout))))),
    };
}
/** The raw OS machine id: /etc/machine-id (Linux), IOPlatformUUID (macOS), MachineGuid (Windows). */
export async function osMachineId(sources) {
    const s = sources ?? (await nodeSources());
    let id;
    if (s.platform === 'darwin') {
        id = /"IOPlatformUUID"\s*=\s*"([^"]+)"/.exec(await s.exec('ioreg', ['-rd1', '-c', 'IOPlatformExpertDevice']))?.[1];
    }
    else if (s.platform === 'win32') {
        id = /MachineGuid\s+REG_SZ\s+(\S+)/.exec(await s.exec('reg', ['query', 'HKLM\\SOFTWARE\\Microsoft\\Cryptography', '/v', 'MachineGuid']))?.[1];
    }
    else {
        for (const path of ['/etc/machine-id', '/var/lib/dbus/machine-id']) {
            id = (await s.readText(path).catch(() => '')).trim() || undefined;
            if (id)
                break;
        }
    }
    if (!id)
        throw new Error(`tollgate-client: no machine id found on ${s.platform}; pass your own hardwareId`);
    return id;
}
/** hex SHA-256 of `tollgate/hwid/v1\n<app_id>\n<machine id>`: 64 characters, stable per app and machine. */
export async function hardwareId(appId, sources) {
    return sha256Hex(`tollgate/hwid/v1\n${appId}\n${await osMachineId(sources)}`);
}
//# sourceMappingURL=hardware-id.js.map