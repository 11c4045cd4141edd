/**
 * Resumable, verified downloads (Node only). The bytes go to `<dest>.part`
 * and become `<dest>` only once the whole file's SHA-256 matches the hash
 * the server signed; an interrupted download resumes with Range/If-Range.
 */
import { incrementalSha256 } from './crypto.js';
import { TollgateVerificationError } from './errors.js';
import { networkError } from './transport.js';
import { downloadLine } from './verify.js';
const ETAG = /^"([0-9a-f]{64})"$/;
export async function download(transport, base, dest, opts = {}) {
    const fs = await import('node:fs/promises');
    const { createReadStream, createWriteStream } = await import('node:fs');
    const part = `${dest}.part`;
    const meta = `${dest}.part.json`;
    const discard = () => Promise.all([fs.rm(part, { force: true }), fs.rm(meta, { force: true })]);
    // What an earlier attempt left: bytes and the ETag they belong to (If-Range makes the server start over if the file changed).
    let offset = 0;
    let etag;
    try {
        etag = JSON.parse(await fs.readFile(meta, 'utf8')).etag;
        offset = (await fs.stat(part)).size;
    }
    catch {
        await discard();
    }
    const headers = offset > 0 && etag ? { range: `bytes=${offset}-`, 'if-range': etag } : {};
    const { response, sent } = await transport.fetch({ ...base, headers: { ...base.headers, ...headers } });
    if (response.status !== 200 && response.status !== 206) {
        const body = await response.arrayBuffer().then((b) => new Uint8Array(b), (err) => Promise.reject(networkError(err, false)));
        return transport.refuse(base, await transport.answer(base, sent, response, body));
    }
    const contentRange = response.headers.get('content-range');
    const claimed = ETAG.exec(response.headers.get('etag') ?? '')?.[1];
    // With the ETag the signature is checked now, before a byte is written; without it, once the file is whole.
    if (claimed)
        await transport.verify(sent, response, downloadLine(claimed, contentRange));
    const total = Number(/\/(\d+)$/.exec(contentRange ?? '')?.[1] ?? response.headers.get('content-length') ?? NaN);
    let start = 0;
    if (response.status === 206) {
        start = Number(/^bytes (\d+)-/.exec(contentRange ?? '')?.[1] ?? NaN);
        if (start !== offset) {
            await response.body?.cancel();
            await discard();
            throw new Error(`tollgate-client: the server resumed at ${contentRange}, not at byte ${offset}; retry the download`);
        }
    }
    await fs.writeFile(meta, JSON.stringify({ etag: response.headers.get('etag') }));
    const out = createWriteStream(part, { flags: start === 0 ? 'w' : 'a' });
    let received = start;
    try {
        const chunks = response.body[Symbol.asyncIterator]();
        for (;;) {
            // Only the read is a network failure (the connection dropped mid-file: what arrived is kept for a resume);
            // an error of onProgress is the app's and stays as it is.
            const next = await chunks.next().catch((err) => Promise.reject(networkError(err, false)));
            if (next.done)
                break;
            const chunk = next.value;
            if (!out.write(chunk))
                await new Promise((resolve) => out.once('drain', () => resolve()));
            received += chunk.length;
            opts.onProgress?.(received, Number.isFinite(total) ? total : undefined);
        }
    }
    finally {
        await new Promise((resolve, reject) => out.end((err) => (err ? reject(err) : resolve())));
    }
    // The whole assembled file, old bytes and new, against the hash the server signed.
    const hash = await incrementalSha256();
    for await (const chunk of createReadStream(part))
        hash.update(chunk);
    const actual = hash.hex();
    try {
        if (claimed === undefined)
            await transport.verify(sent, response, downloadLine(actual, contentRange));
        else if (actual !== claimed)
            throw new TollgateVerificationError('bad_signature', response.status);
    }
    catch (err) {
        await discard();
        throw err;
    }
    await fs.rename(part, dest);
    await fs.rm(meta, { force: true });
    return { path: dest, size: received, sha256: actual, resumed: start > 0 };
}
//# sourceMappingURL=download.js.map