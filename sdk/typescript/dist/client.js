import { download } from './download.js';
import { hardwareId as machineHardwareId } from './hardware-id.js';
import { Memory } from './memory.js';
import { Offline } from './offline.js';
import { StateKeeper } from './state.js';
import { FileLeaseStore } from './store.js';
import { Transport } from './transport.js';
import { TollgateError, TollgateLeaseError, TollgateNetworkError, TollgateUnavailableError, TollgateVerificationError } from './errors.js';
/** When this SDK version was released (unix ms): the default `notBefore`. Raise it with each release. */
export const SDK_RELEASED_AT = Date.UTC(2026, 10, 23);
/**
 * The failures after which checkAccess() falls back to the lease: no answer from Tollgate arrived (docs/signing.md,
 * "The SDK error model"). A verified refusal and a forged answer are not among them.
 */
export function noAnswerFromTollgate(err) {
    return err instanceof TollgateNetworkError || err instanceof TollgateUnavailableError || (err instanceof TollgateVerificationError && err.verdict === 'missing_signature');
}
const DAY_MS = 24 * 3600 * 1000;
/** Header values travel as bytes: send UTF-8, as the server reads them (Node's fetch writes each char as one byte). */
const headerText = (text) => String.fromCharCode(...new TextEncoder().encode(text));
/** A verified answer's JSON body: parsed only now, the bytes were verified first. */
const parse = (body) => (body.length === 0 ? undefined : JSON.parse(new TextDecoder().decode(body)));
export class TollgateClient {
    options;
    /** The user of the calls that need one; set by login() (or by you), cleared by logout(). */
    auth = null;
    transport;
    offline;
    hwid;
    /** The app answered leases_disabled: checkAccess() stops asking for leases in this process. */
    leasesDisabled = false;
    constructor(options) {
        this.options = options;
        const clock = { now: options.clock?.now ?? Date.now, monotonic: options.clock?.monotonic ?? (() => performance.now()) };
        const pinned = { appId: options.appId, rootPublicKey: options.rootPublicKey };
        let id;
        this.hwid = () => (id ??= options.hardwareId !== undefined ? Promise.resolve(options.hardwareId) : machineHardwareId(options.appId));
        let store;
        const leaseStore = () => (store ??= options.leaseStore ? Promise.resolve(options.leaseStore) : FileLeaseStore.forApp(options.appId));
        const memory = new Memory(async () => {
            const s = await leaseStore();
            return { store: s, keeper: new StateKeeper(s, options.appId, await this.hwid()) };
        });
        this.transport = new Transport({
            baseUrl: options.baseUrl, appKey: options.appKey, appSecret: options.appSecret, pinned, clock, fetch: options.fetch ?? globalThis.fetch.bind(globalThis),
            builtinFetch: options.fetch === undefined, connectTimeoutMs: options.connectTimeoutMs ?? 10_000, timeoutMs: options.timeoutMs ?? 30_000,
            leaseUserId: async () => (await this.offline.stored())?.user_id ?? null,
            keyRefreshMs: options.keyRefreshMs ?? DAY_MS, serverTimeFloor: options.notBefore ?? SDK_RELEASED_AT,
        }, memory);
        this.offline = new Offline(pinned, clock, memory, leaseStore, this.hwid, (state) => this.transport.maxServerTime(state));
    }
    async signUp(body) {
        return this.json({ method: 'POST', path: '/sign_up', json: await this.withHardware(body) });
    }
    async signUpWithLicenseCode(body) {
        return this.json({ method: 'POST', path: '/sign_up_with_license_code', json: await this.withHardware(body) });
    }
    async activateLicense(body) {
        return this.json({ method: 'POST', path: '/activate_license', json: await this.withHardware(body) });
    }
    /**
     * POST /redeem (issue 24): the user of `auth` (default the client's; a trial's session too, which has no password
     * for activateLicense()) redeems a license code, and a trial converts. The answer's user is noted as
     * getAppContext()'s is. Refusals (TollgateError): 401 invalid_license or license_used, 403 banned, 422. Not a
     * call whose refusal drops the lease: an invalid code says nothing about the user.
     */
    async redeem(code, auth = this.auth) {
        const res = await this.transport.send({ method: 'POST', path: '/redeem', headers: await this.userHeaders(auth), json: { code } });
        const answer = parse(res.body);
        this.transport.noteUser(res.credentialsSha256, answer.user.id);
        return answer;
    }
    /** Logs in; the session is then used by the calls that need a user. */
    async login(body) {
        const session = await this.json({ method: 'POST', path: '/auth/login', json: await this.withHardware(body) });
        this.auth = { sessionToken: session.session_token };
        return session;
    }
    async logout() {
        if (!this.auth || !('sessionToken' in this.auth))
            throw new Error('tollgate-client: logout() needs a session (log in first)');
        await this.transport.send({ method: 'POST', path: '/auth/logout', headers: await this.userHeaders(this.auth) });
        this.auth = null;
    }
    /** The application (variables, files) and the user; `auth` defaults to the client's. */
    async getAppContext(auth = this.auth) {
        const res = await this.transport.send({ method: 'GET', path: '/app_context', headers: await this.userHeaders(auth), dropsLease: true });
        const context = parse(res.body);
        if (context.user)
            this.transport.noteUser(res.credentialsSha256, context.user.id);
        return context;
    }
    /** Downloads a file to `destination`, resuming an interrupted download, verified against the signed file hash. */
    async downloadFile(fileId, destination, opts = {}) {
        const path = `/files/${encodeURIComponent(fileId)}/download`;
        return download(this.transport, { method: 'GET', path, headers: await this.userHeaders(opts.auth === undefined ? this.auth : opts.auth), dropsLease: true }, destination, opts);
    }
    /** Fetches an offline lease for this user and device and keeps it in the lease store. */
    async createLease(auth = this.auth) {
        const headers = { ...(await this.userHeaders(auth)), 'x-hardware-id': headerText(await this.hwid()) };
        const res = await this.transport.send({ method: 'POST', path: '/lease', headers, dropsLease: true });
        const lease = await this.offline.keep(new TextDecoder().decode(res.body), res.t);
        this.transport.noteUser(res.credentialsSha256, lease.userId);
        return lease;
    }
    /**
     * Online first, the lease when no answer from Tollgate arrived (docs/signing.md, "The SDK error model"): a
     * verified app context is `source: 'online'` (and the lease is renewed, best effort, when none is stored, it is
     * another user's, it was dropped or its renew_after passed); a network error, an unavailable service or an unsigned answer falls back to the stored
     * lease (`source: 'lease'`, the failure as `cause`), which throws TollgateLeaseError (with that `cause`) when it
     * is not good. A verified refusal (TollgateError) and a forged answer (TollgateVerificationError) are thrown.
     */
    async checkAccess(auth = this.auth) {
        let context;
        try {
            context = await this.getAppContext(auth);
        }
        catch (err) {
            if (!noAnswerFromTollgate(err))
                throw err;
            try {
                return { source: 'lease', lease: await this.checkLease(), cause: err };
            }
            catch (leaseErr) {
                throw leaseErr instanceof TollgateLeaseError ? leaseErr.withCause(err) : leaseErr;
            }
        }
        return { source: 'online', context, lease: context.user ? await this.renewLease(auth, context.user.id) : null };
    }
    /** The lease renewal of checkAccess(): errors are swallowed (the app is online anyway); the new lease, or null when none was fetched. */
    async renewLease(auth, userId) {
        if (this.leasesDisabled)
            return null;
        try {
            if (!(await this.offline.needsLease(userId, this.transport.serverNow())))
                return null;
            return await this.createLease(auth);
        }
        catch (err) {
            if (err instanceof TollgateError && err.code === 'leases_disabled')
                this.leasesDisabled = true;
            return null;
        }
    }
    /** Checks the stored lease without network; throws TollgateLeaseError with the verdict unless it is good. Call it periodically while offline. */
    checkLease() {
        return this.offline.check();
    }
    /** GET /signing_keys; also refreshes the retired kids the client refuses. */
    getSigningKeys() {
        return this.transport.fetchKeyList();
    }
    async json(req) {
        return parse((await this.transport.send(req)).body);
    }
    /**
     * The hardware id for a call that takes one: the app's, else the default hardwareId(appId) (amendment F: on
     * every such call, so device authentication sees the same id on login as on /lease). Undefined only when the
     * OS has no machine id and the app gave none (the call then goes without, as the server allows).
     */
    async deviceId() {
        return this.hwid().catch(() => undefined);
    }
    async withHardware(body) {
        if (body.hardware_id !== undefined)
            return body;
        const id = await this.deviceId();
        return id === undefined ? body : { ...body, hardware_id: id };
    }
    async userHeaders(auth) {
        const h = {};
        if (auth && 'sessionToken' in auth)
            h.authorization = `Bearer ${auth.sessionToken}`;
        else if (auth && 'licenseCode' in auth)
            h['x-api-license-code'] = headerText(auth.licenseCode);
        else if (auth)
            Object.assign(h, { 'x-api-username': headerText(auth.username), 'x-api-password': headerText(auth.password) });
        const id = await this.deviceId();
        if (id !== undefined)
            h['x-hardware-id'] = headerText(id);
        return h;
    }
}
//# sourceMappingURL=client.js.map