/**
 * TollgateClient: a typed call per client endpoint, each sent with a fresh
 * nonce and verified against the pinned root before its body is parsed
 * (docs/signing.md). A failed verification is a thrown
 * TollgateVerificationError; a verified error answer a thrown TollgateError.
 */
import type { Operations, User } from './api-types.js';
import type { Pinned } from './certificate.js';
import { download, type DownloadOptions, type DownloadResult } from './download.js';
import { hardwareId as machineHardwareId } from './hardware-id.js';
import { Memory } from './memory.js';
import { liveEntitlements } from './lease.js';
import { Offline, type LeaseInfo } from './offline.js';
import { Heartbeat, type Seat, type SeatAnswer, type SeatState, type Timers, realTimers } from './seats.js';
import { StateKeeper } from './state.js';
import { FileLeaseStore, type LeaseStore } from './store.js';
import { Transport, type Clock, type KeyList, type Outgoing } from './transport.js';
import { TollgateError, TollgateLeaseError, TollgateNetworkError, TollgateSeatLostError, TollgateUnavailableError, TollgateVerificationError, type TollgateException } from './errors.js';

export interface TollgateClientOptions {
  /** The server, e.g. https://licensing.example.com (a path prefix must reach the server unchanged: it is signed). */
  baseUrl: string;
  appKey: string;
  appSecret: string;
  /** Pinned: the app id and the public root key printed by `tollgate keys init`. */
  appId: string;
  rootPublicKey: string;
  /** This device's id (sent as x-hardware-id / hardware_id, binds leases). Default: hardwareId(appId) from the OS machine id, when first needed. */
  hardwareId?: string;
  /** Where the lease and the rollback state live. Default: files in the user's app-data folders (Node). */
  leaseStore?: LeaseStore;
  /** Injected clocks (tests): wall `now()` and `monotonic()`, both in ms. */
  clock?: Partial<Clock>;
  /** Your own fetch (a proxy agent, tests). Default: Node's. */
  fetch?: typeof fetch;
  /** Connect timeout in ms (Node's built-in fetch only). Default 10 000. */
  connectTimeoutMs?: number;
  /** Total timeout of a call in ms, from sending to the last byte of the answer (a download: to its headers). Default 30 000. */
  timeoutMs?: number;
  /** How often the key list is refreshed when no unknown kid forces it. Default: one day. */
  keyRefreshMs?: number;
  /**
   * A floor for the server time this install has seen (unix ms), e.g. your app's build time. Default: the SDK's
   * release time (SDK_RELEASED_AT). A key that ended before it is refused from the first answer on, so a leaked
   * private key of an ended key cannot sign a back-dated answer or lease for a fresh install (amendment F).
   */
  notBefore?: number;
  /** Called when a checked-out floating seat is lost (also: onSeatLost()); the client's next call then throws the error. */
  onSeatLost?: (err: TollgateSeatLostError) => void;
  /** Timers of the seat heartbeat (tests). Default: setTimeout, unref'd. */
  timers?: Timers;
  /** Release the seat when the process is about to exit on its own (Node's beforeExit). Default true. */
  releaseSeatOnExit?: boolean;
}

/** When this SDK version was released (unix ms): the default `notBefore`. Raise it with each release. */
export const SDK_RELEASED_AT = Date.UTC(2026, 10, 23);

/**
 * What checkAccess() answered from: the server (a verified app context; `lease` is the lease now stored, or null)
 * or the stored lease, with the online failure that led to it.
 */
export type Access =
  | { source: 'online'; context: Answer<'getAppContext'>; /** The lease renewed by this call, null when none was due (or it failed). */ lease: LeaseInfo | null }
  | { source: 'lease'; lease: LeaseInfo; cause: TollgateException };

/**
 * The failures after which checkAccess() falls back to the lease: no answer from Tollgate arrived (docs/signing.md,
 * "The SDK error model"). A verified refusal and a forged answer are not among them.
 */
export function noAnswerFromTollgate(err: unknown): err is TollgateException {
  return err instanceof TollgateNetworkError || err instanceof TollgateUnavailableError || (err instanceof TollgateVerificationError && err.verdict === 'missing_signature');
}

/** How a call authenticates its user: a session (after login), a license code, or a username and password. */
/** POST /redeem's answer: the activation as activateLicense() answers it, and the user after it. */
export interface Redemption {
  activation: Answer<'activateLicense'>;
  user: NonNullable<Answer<'getAppContext'>['user']>;
}

export type UserAuth = { sessionToken: string } | { licenseCode: string } | { username: string; password: string };

type Body<K extends keyof Operations> = Operations[K]['body'];
type Answer<K extends keyof Operations> = Operations[K]['answer'];

const DAY_MS = 24 * 3600 * 1000;

/** Header values travel as bytes: send UTF-8, as the server reads them (Node's fetch writes each char as one byte). */
const headerText = (text: string): string => String.fromCharCode(...new TextEncoder().encode(text));

/** A verified answer's JSON body: parsed only now, the bytes were verified first. */
const parse = <T>(body: Uint8Array): T => (body.length === 0 ? undefined : JSON.parse(new TextDecoder().decode(body))) as T;

export class TollgateClient {
  /** The user of the calls that need one; set by login() (or by you), cleared by logout(). */
  auth: UserAuth | null = null;
  private readonly transport: Transport;
  private readonly offline: Offline;
  private readonly hwid: () => Promise<string>;
  /** The app answered leases_disabled: checkAccess() stops asking for leases in this process. */
  private leasesDisabled = false;
  /**
   * What has() answers from (issue 24): the last verified answer carrying the user (online), or the last lease that
   * checked good (offline); null when neither, or after a verified refusal, a failed lease check or logout().
   */
  private entitledBy: { source: 'online'; user: User } | { source: 'lease'; lease: LeaseInfo } | null = null;
  private heartbeat: Heartbeat | null = null;
  private seatLost: TollgateSeatLostError | null = null;
  private readonly seatListeners = new Set<(err: TollgateSeatLostError) => void>();
  private readonly clock: Clock;
  private exitHook: (() => void) | null = null;

  constructor(private readonly options: TollgateClientOptions) {
    const clock: Clock = { now: options.clock?.now ?? Date.now, monotonic: options.clock?.monotonic ?? (() => performance.now()) };
    this.clock = clock;
    if (options.onSeatLost) this.seatListeners.add(options.onSeatLost);
    const pinned: Pinned = { appId: options.appId, rootPublicKey: options.rootPublicKey };
    let id: Promise<string> | undefined;
    this.hwid = () => (id ??= options.hardwareId !== undefined ? Promise.resolve(options.hardwareId) : machineHardwareId(options.appId));
    let store: Promise<LeaseStore> | undefined;
    const leaseStore = () => (store ??= options.leaseStore ? Promise.resolve(options.leaseStore) : FileLeaseStore.forApp(options.appId));
    const memory = new Memory(async () => {
      const s = await leaseStore();
      return { store: s, keeper: new StateKeeper(s, options.appId, await this.hwid()) };
    });
    this.transport = new Transport(
      {
        baseUrl: options.baseUrl, appKey: options.appKey, appSecret: options.appSecret, pinned, clock, fetch: options.fetch ?? globalThis.fetch.bind(globalThis),
        builtinFetch: options.fetch === undefined, connectTimeoutMs: options.connectTimeoutMs ?? 10_000, timeoutMs: options.timeoutMs ?? 30_000,
        leaseUserId: async () => (await this.offline.stored())?.user_id ?? null,
        keyRefreshMs: options.keyRefreshMs ?? DAY_MS, serverTimeFloor: options.notBefore ?? SDK_RELEASED_AT,
      },
      memory,
    );
    this.offline = new Offline(pinned, clock, memory, leaseStore, this.hwid, (state) => this.transport.maxServerTime(state));
  }

  async signUp(body: Body<'signUp'>): Promise<Answer<'signUp'>> {
    return this.entitledFrom(await this.json<Answer<'signUp'>>({ method: 'POST', path: '/sign_up', json: await this.withHardware(body) }));
  }

  async signUpWithLicenseCode(body: Body<'signUpWithLicenseCode'>): Promise<Answer<'signUpWithLicenseCode'>> {
    return this.entitledFrom(await this.json<Answer<'signUpWithLicenseCode'>>({ method: 'POST', path: '/sign_up_with_license_code', json: await this.withHardware(body) }));
  }

  async activateLicense(body: Body<'activateLicense'>): Promise<Answer<'activateLicense'>> {
    const answer = await this.json<Answer<'activateLicense'> & { user?: User }>({ method: 'POST', path: '/activate_license', json: await this.withHardware(body) });
    if (answer?.user) this.entitledFrom(answer.user);
    return answer;
  }

  /**
   * POST /trial (issue 24): starts, or resumes, this device's trial; the session is then the client's `auth`, as
   * after login(). `hardwareId` defaults to the client's. Refusals: 403 trials_disabled, trial_used, banned.
   */
  async startTrial(hardwareId?: string, email?: string): Promise<Answer<'startTrial'>> {
    const hardware_id = hardwareId ?? (await this.hwid());
    const answer = await this.json<Answer<'startTrial'>>({ method: 'POST', path: '/trial', json: { hardware_id, ...(email !== undefined && { email }) } });
    this.auth = { sessionToken: answer.session_token };
    this.entitledFrom(answer.user);
    return answer;
  }

  /**
   * POST /redeem (issue 24): the user of `auth` (default the client's; a trial's session too, which has no password
   * for activateLicense()) redeems a license code, and a trial converts. The answer's user is noted as
   * getAppContext()'s is. Refusals (TollgateError): 401 invalid_license or license_used, 403 banned, 422. Not a
   * call whose refusal drops the lease: an invalid code says nothing about the user.
   */
  async redeem(code: string, auth: UserAuth | null = this.auth): Promise<Redemption> {
    const res = await this.transport.send({ method: 'POST', path: '/redeem', headers: await this.userHeaders(auth), json: { code } });
    const answer = parse<Redemption>(res.body);
    this.transport.noteUser(res.credentialsSha256, answer.user.id);
    this.entitledFrom(answer.user); // a converted trial's entitlements, at once
    return answer;
  }

  /** Logs in; the session is then used by the calls that need a user. */
  async login(body: Body<'login'>): Promise<Answer<'login'>> {
    const session = await this.json<Answer<'login'>>({ method: 'POST', path: '/auth/login', json: await this.withHardware(body) });
    this.auth = { sessionToken: session.session_token };
    return session;
  }

  async logout(): Promise<void> {
    if (!this.auth || !('sessionToken' in this.auth)) throw new Error('tollgate-client: logout() needs a session (log in first)');
    await this.transport.send({ method: 'POST', path: '/auth/logout', headers: await this.userHeaders(this.auth) });
    this.auth = null;
    this.entitledBy = null;
  }

  /** The application (variables, files) and the user; `auth` defaults to the client's. */
  async getAppContext(auth: UserAuth | null = this.auth): Promise<Answer<'getAppContext'>> {
    this.throwIfSeatLost();
    let res;
    try {
      res = await this.transport.send({ method: 'GET', path: '/app_context', headers: await this.userHeaders(auth), dropsLease: true });
    } catch (err) {
      // A verified refusal says this user gets nothing now: has() stops answering from an older answer.
      if (err instanceof TollgateError) this.entitledBy = null;
      throw err;
    }
    const context = parse<Answer<'getAppContext'>>(res.body);
    if (context.user) this.transport.noteUser(res.credentialsSha256, context.user.id);
    this.entitledBy = context.user ? { source: 'online', user: context.user as User } : null;
    return context;
  }

  /** Downloads a file to `destination`, resuming an interrupted download, verified against the signed file hash. */
  async downloadFile(fileId: string, destination: string, opts: DownloadOptions & { auth?: UserAuth | null } = {}): Promise<DownloadResult> {
    this.throwIfSeatLost();
    const path = `/files/${encodeURIComponent(fileId)}/download`;
    return download(this.transport, { method: 'GET', path, headers: await this.userHeaders(opts.auth === undefined ? this.auth : opts.auth), dropsLease: true }, destination, opts);
  }

  /** Fetches an offline lease for this user and device and keeps it in the lease store. */
  async createLease(auth: UserAuth | null = this.auth): Promise<LeaseInfo> {
    this.throwIfSeatLost();
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
  async checkAccess(auth: UserAuth | null = this.auth): Promise<Access> {
    this.throwIfSeatLost();
    let context: Answer<'getAppContext'>;
    try {
      context = await this.getAppContext(auth);
    } catch (err) {
      if (!noAnswerFromTollgate(err)) throw err;
      try {
        return { source: 'lease', lease: await this.checkLease(), cause: err };
      } catch (leaseErr) {
        throw leaseErr instanceof TollgateLeaseError ? leaseErr.withCause(err) : leaseErr;
      }
    }
    return { source: 'online', context, lease: context.user ? await this.renewLease(auth, context.user.id) : null };
  }

  /** The lease renewal of checkAccess(): errors are swallowed (the app is online anyway); the new lease, or null when none was fetched. */
  private async renewLease(auth: UserAuth | null, userId: string): Promise<LeaseInfo | null> {
    if (this.leasesDisabled) return null;
    try {
      if (!(await this.offline.needsLease(userId, this.transport.serverNow()))) return null;
      return await this.createLease(auth);
    } catch (err) {
      if (err instanceof TollgateError && err.code === 'leases_disabled') this.leasesDisabled = true;
      return null;
    }
  }

  /** Checks the stored lease without network; throws TollgateLeaseError with the verdict unless it is good. Call it periodically while offline. */
  async checkLease(): Promise<LeaseInfo> {
    try {
      const lease = await this.offline.check();
      this.entitledBy = { source: 'lease', lease };
      return lease;
    } catch (err) {
      if (this.entitledBy?.source === 'lease') this.entitledBy = null;
      throw err;
    }
  }

  // ---------------------------------------------------------------- entitlements (issue 24)

  /**
   * Whether the user holds entitlement `code` now: online from the last verified answer carrying the user
   * (getAppContext(), checkAccess(), sign-up, startTrial()), offline from the lease the last checkLease() (or
   * checkAccess() falling back) found good: the code present and its `until` not reached on the trusted clock.
   * False when neither is known: an unsigned or unverified answer never grants anything.
   */
  has(code: string): boolean {
    return this.entitlements().includes(code);
  }

  /** The entitlement codes the user holds now (sorted), by the rule of has(). */
  entitlements(): string[] {
    this.throwIfSeatLost();
    const by = this.entitledBy;
    if (by === null) return [];
    if (by.source === 'online') return [...(by.user.membership.entitlements ?? [])].sort();
    const now = this.transport.serverNow();
    if (now >= by.lease.expiresAt) return [];
    return liveEntitlements({ entitlements: by.lease.entitlements }, now).sort();
  }

  /** Whether the user is a trial user: `membership.is_trial` online, the lease's `is_trial` offline; false when unknown. */
  isTrial(): boolean {
    this.throwIfSeatLost();
    const by = this.entitledBy;
    if (by === null) return false;
    return by.source === 'online' ? by.user.membership.is_trial === true : by.lease.isTrial && this.transport.serverNow() < by.lease.expiresAt;
  }

  private entitledFrom<T>(user: T): T {
    if (user && typeof user === 'object' && 'membership' in user) this.entitledBy = { source: 'online', user: user as unknown as User };
    return user;
  }

  // ---------------------------------------------------------------- floating seats (issue 25)

  /**
   * POST /seats: checks a floating seat out for this device (the same seat again if it holds one) and starts the
   * heartbeat (POST /seats/heartbeat at a third of heartbeat_seconds, a failed beat retried before the seat
   * expires). A lost seat (404 seat_not_found, a 409, or the expiry passed with no beat through) is reported to the
   * onSeatLost listeners and thrown as TollgateSeatLostError by the next call. 409 seats_exhausted (err.extra:
   * in_use, max, next_free_at) and seats_not_enabled are thrown as TollgateError.
   */
  async checkoutSeat(auth: UserAuth | null = this.auth): Promise<Seat> {
    this.seatLost = null;
    const headers = await this.seatHeaders(auth);
    const { answer, sentAt } = await this.seatCall('POST', '/seats', headers);
    this.heartbeat?.stop();
    const hb = new Heartbeat(
      answer,
      sentAt,
      () => this.seatCall('POST', '/seats/heartbeat', headers),
      () => this.clock.monotonic(),
      (err) => this.loseSeat(hb, err),
      () => {},
      this.options.timers ?? realTimers,
    );
    this.heartbeat = hb;
    this.hookExit();
    return hb.seat;
  }

  /** The seat held now (as last confirmed by a heartbeat), or null. */
  get seat(): Seat | null {
    return this.heartbeat?.seat ?? null;
  }

  /** 'held' while the heartbeat runs, 'lost' from a loss until the next call has thrown it, else 'none'. */
  get seatState(): SeatState {
    return this.seatLost ? 'lost' : this.heartbeat ? 'held' : 'none';
  }

  /** Listens for a lost seat; returns the function that stops listening. */
  onSeatLost(listener: (err: TollgateSeatLostError) => void): () => void {
    this.seatListeners.add(listener);
    return () => void this.seatListeners.delete(listener);
  }

  /**
   * DELETE /seats: stops the heartbeat and releases this device's seat. A seat an offline lease holds (issue 25)
   * stays taken on the server until the lease ends, whatever the device says (a floating license must not become
   * unlimited by going offline): the answer is then `released: false` with `held_until`, and the stored lease is
   * kept, so the device may go on offline until then. Any other answer (released, or no seat) drops the stored
   * lease: the server no longer counts a seat for this device. A failed call keeps it (nothing was freed).
   */
  async releaseSeat(auth?: UserAuth | null): Promise<Answer<'releaseSeat'>> {
    const hb = this.heartbeat;
    hb?.stop();
    this.heartbeat = null;
    this.seatLost = null;
    this.unhookExit();
    const headers = await this.seatHeaders(auth === undefined ? this.auth : auth);
    const answer = await this.json<Answer<'releaseSeat'>>({ method: 'DELETE', path: '/seats', headers });
    if (answer.held_until === undefined && (await this.offline.stored()) !== null) await this.offline.drop();
    return answer;
  }

  /**
   * Clean shutdown: releases the seat when one is held (errors ignored: the server frees it when its heartbeats
   * stop). Call it before your app exits; Node's beforeExit does it for you when the process ends on its own, but
   * not on process.exit() or a signal.
   */
  async close(): Promise<void> {
    this.unhookExit();
    if (this.heartbeat === null) return;
    await this.releaseSeat().catch(() => undefined);
  }

  private async seatHeaders(auth: UserAuth | null): Promise<Record<string, string>> {
    const headers = await this.userHeaders(auth);
    if (headers['x-hardware-id'] === undefined) headers['x-hardware-id'] = headerText(await this.hwid());
    return headers;
  }

  private async seatCall(method: 'POST', path: string, headers: Record<string, string>): Promise<{ answer: SeatAnswer; sentAt: number }> {
    const sentAt = this.clock.monotonic();
    const res = await this.transport.send({ method, path, headers });
    return { answer: parse<SeatAnswer>(res.body), sentAt };
  }

  private loseSeat(hb: Heartbeat, err: TollgateSeatLostError): void {
    if (this.heartbeat !== hb) return;
    this.heartbeat = null;
    this.seatLost = err;
    this.unhookExit();
    let first: unknown;
    let failed = false;
    for (const listener of [...this.seatListeners]) {
      try {
        listener(err);
      } catch (e) {
        if (!failed) [first, failed] = [e, true];
      }
    }
    if (failed) throw first; // as an EventEmitter would: a listener's bug is not swallowed
  }

  /** The lost seat, thrown once by the next call. */
  private throwIfSeatLost(): void {
    const lost = this.seatLost;
    if (lost === null) return;
    this.seatLost = null;
    throw lost;
  }

  private hookExit(): void {
    if (this.exitHook !== null || this.options.releaseSeatOnExit === false || typeof process === 'undefined' || typeof process.once !== 'function') return;
    this.exitHook = () => {
      this.exitHook = null;
      void this.close();
    };
    process.once('beforeExit', this.exitHook);
  }

  private unhookExit(): void {
    if (this.exitHook === null) return;
    process.removeListener('beforeExit', this.exitHook);
    this.exitHook = null;
  }

  // ---------------------------------------------------------------- device self-reset (issue 25)

  /**
   * POST /devices/reset: frees the user's devices (as the operator's reset does). It ends every session of the
   * user, this client's included: a session `auth` is cleared (log in again). Refusals: 429 reset_cooldown
   * (err.retryAfter seconds, err.lastResetAt), 403 reset_disabled, 403 banned.
   */
  async resetDevices(auth: UserAuth | null = this.auth): Promise<Answer<'resetOwnDevices'>> {
    const answer = await this.json<Answer<'resetOwnDevices'>>({ method: 'POST', path: '/devices/reset', headers: await this.userHeaders(auth) });
    if (auth && 'sessionToken' in auth && this.auth && 'sessionToken' in this.auth && this.auth.sessionToken === auth.sessionToken) this.auth = null;
    return answer;
  }

  /** GET /signing_keys; also refreshes the retired kids the client refuses. */
  getSigningKeys(): Promise<KeyList> {
    return this.transport.fetchKeyList();
  }

  private async json<T>(req: Outgoing): Promise<T> {
    return parse<T>((await this.transport.send(req)).body);
  }

  /**
   * The hardware id for a call that takes one: the app's, else the default hardwareId(appId) (amendment F: on
   * every such call, so device authentication sees the same id on login as on /lease). Undefined only when the
   * OS has no machine id and the app gave none (the call then goes without, as the server allows).
   */
  private async deviceId(): Promise<string | undefined> {
    return this.hwid().catch(() => undefined);
  }

  private async withHardware<T extends { hardware_id?: string }>(body: T): Promise<T> {
    if (body.hardware_id !== undefined) return body;
    const id = await this.deviceId();
    return id === undefined ? body : { ...body, hardware_id: id };
  }

  private async userHeaders(auth: UserAuth | null): Promise<Record<string, string>> {
    const h: Record<string, string> = {};
    if (auth && 'sessionToken' in auth) h.authorization = `Bearer ${auth.sessionToken}`;
    else if (auth && 'licenseCode' in auth) h['x-api-license-code'] = headerText(auth.licenseCode);
    else if (auth) Object.assign(h, { 'x-api-username': headerText(auth.username), 'x-api-password': headerText(auth.password) });
    const id = await this.deviceId();
    if (id !== undefined) h['x-hardware-id'] = headerText(id);
    return h;
  }
}
