import { type Outgoing, type Transport } from './transport.js';
export interface DownloadResult {
    path: string;
    size: number;
    sha256: string;
    /** True when earlier bytes were kept and only the rest was fetched. */
    resumed: boolean;
}
export interface DownloadOptions {
    onProgress?: (received: number, total: number | undefined) => void;
}
export declare function download(transport: Transport, base: Outgoing, dest: string, opts?: DownloadOptions): Promise<DownloadResult>;
