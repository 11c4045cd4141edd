export type Exec = (command: string, args: string[]) => Promise<string>;
export type ReadText = (path: string) => Promise<string>;
export interface MachineIdSources {
    platform: string;
    readText: ReadText;
    exec: Exec;
}
/** The raw OS machine id: /etc/machine-id (Linux), IOPlatformUUID (macOS), MachineGuid (Windows). */
export declare function osMachineId(sources?: MachineIdSources): Promise<string>;
/** hex SHA-256 of `tollgate/hwid/v1\n<app_id>\n<machine id>`: 64 characters, stable per app and machine. */
export declare function hardwareId(appId: string, sources?: MachineIdSources): Promise<string>;
