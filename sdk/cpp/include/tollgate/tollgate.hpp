// Tollgate C++ SDK: typed calls to a Tollgate server, every answer verified
// against the pinned root key before its body is parsed (docs/signing.md),
// offline leases with clock-rollback detection, resumable verified downloads.
//
// Errors are exceptions (see README.md, "Errors": the error model of docs/signing.md):
//   tollgate::NetworkError       no answer: connection refused or reset, DNS, TLS, timeout (reason())
//   tollgate::UnavailableError   any 5xx, unsigned or verified (status(), verified(), code(), retry_after())
//   tollgate::VerificationError  an answer that did not verify (verdict())
//   tollgate::RefusedError       (= ApiError) a verified 4xx (status(), code(), detail(), ban_reason(), user_id())
//   tollgate::LeaseError         no usable offline lease (verdict(), the times, cause())
// all derived from tollgate::Error (a std::runtime_error). Client::check_access() tries online and falls back
// to the lease exactly when no answer from Tollgate arrived.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace tollgate {

using Bytes = std::vector<std::uint8_t>;

// ---------------------------------------------------------------- verdicts

/** The checks of a signed answer, in order (docs/signing.md): the first failure is the verdict. */
enum class AnswerVerdict {
  ok,
  missing_signature,
  malformed_signature,
  bad_certificate,
  wrong_app,
  kid_mismatch,
  key_retired,
  key_expired,
  bad_signature,
};

/** The offline check of a lease, in order; no_lease when there is none at all. */
enum class LeaseVerdict {
  ok,
  malformed,
  bad_certificate,
  wrong_app,
  bad_signature,
  key_expired,
  key_retired,
  hardware_mismatch,
  superseded,
  dropped,
  clock_rollback,
  expired,
  runtime_exhausted,
  no_lease,
};

enum class CertificateVerdict { ok, bad_certificate, wrong_app, key_expired };

const char* to_string(AnswerVerdict v);
const char* to_string(LeaseVerdict v);
const char* to_string(CertificateVerdict v);

// ---------------------------------------------------------------- errors

/** Base of every error the SDK throws. */
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/** An answer that did not verify: it may come from an emulator, a replay or a tampering proxy, so nothing of it is returned. */
class VerificationError : public Error {
 public:
  VerificationError(AnswerVerdict verdict, std::optional<int> unverified_status);
  AnswerVerdict verdict() const noexcept { return verdict_; }
  /** The HTTP status received, for diagnostics only: it is not trusted. */
  std::optional<int> unverified_status() const noexcept { return status_; }

 private:
  AnswerVerdict verdict_;
  std::optional<int> status_;
};

struct FieldError {
  std::string field;
  std::string message;
};

/**
 * A verified refusal (a 4xx) of the server: its status and stable `code` (the codes are listed in the
 * Tollgate repository's src/http/errors.ts; the answers' shapes in the server's GET /openapi.json), the
 * operator's ban reason when a `banned` answer carries one, and the user the refusal is about when the
 * request's credentials identified one.
 */
class ApiError : public Error {
 public:
  ApiError(int status, std::string code, std::string detail, std::vector<FieldError> field_errors,
           std::optional<std::string> ban_reason = std::nullopt, std::optional<std::string> user_id = std::nullopt,
           std::string body = {});
  int status() const noexcept { return status_; }
  const std::string& code() const noexcept { return code_; }
  const std::string& detail() const noexcept { return detail_; }
  const std::vector<FieldError>& field_errors() const noexcept { return field_errors_; }
  /** The signed body's optional `ban_reason` (a `banned` refusal whose ban has a reason). */
  const std::optional<std::string>& ban_reason() const noexcept { return ban_reason_; }
  /**
   * The signed body's optional `user_id`: the user whose credentials the refused request carried, when the server
   * identified one (membership_inactive, device_mismatch, device_limit, a user or license ban). Absent for an IP or
   * hardware-id ban, invalid_credentials and invalid_license.
   */
  const std::optional<std::string>& user_id() const noexcept { return user_id_; }
  /** reset_cooldown: the signed body's `retry_after` (seconds until the call may be retried); nullopt otherwise. */
  const std::optional<std::int64_t>& retry_after() const noexcept { return retry_after_; }
  /** reset_cooldown: the signed body's `last_reset_at` (ISO-8601); nullopt otherwise. */
  const std::optional<std::string>& last_reset_at() const noexcept { return last_reset_at_; }
  /**
   * The whole verified body (JSON text), for the fields a refusal adds: `in_use`, `max`, `next_free_at` of
   * seats_exhausted (issue 25), and any later one.
   */
  const std::string& body() const noexcept { return body_; }

 private:
  int status_;
  std::string code_, detail_;
  std::vector<FieldError> field_errors_;
  std::optional<std::string> ban_reason_;
  std::optional<std::string> user_id_;
  std::optional<std::int64_t> retry_after_;
  std::optional<std::string> last_reset_at_;
  std::string body_;
};

/** The error model's name for a verified refusal. */
using RefusedError = ApiError;

/** What is known about the lease when it is refused offline (each nullopt when unknown). */
struct LeaseTimes {
  /** The lease's exp (unix ms, server time). */
  std::optional<std::int64_t> expires_at;
  /** The highest trusted time the client remembers (unix ms). */
  std::optional<std::int64_t> last_seen_time;
  /** Offline runtime left (ms), when the lease limits runtime. */
  std::optional<std::int64_t> runtime_left;
};

/** No usable offline lease: the verdict says why; cause() is the online failure that led check_access() here. */
class LeaseError : public Error {
 public:
  explicit LeaseError(LeaseVerdict verdict, LeaseTimes times = {}, std::exception_ptr cause = nullptr);
  LeaseVerdict verdict() const noexcept { return verdict_; }
  const std::optional<std::int64_t>& expires_at() const noexcept { return times_.expires_at; }
  const std::optional<std::int64_t>& last_seen_time() const noexcept { return times_.last_seen_time; }
  const std::optional<std::int64_t>& runtime_left() const noexcept { return times_.runtime_left; }
  /** Null unless check_access() tried the lease after an online failure (rethrow it to inspect it). */
  std::exception_ptr cause() const noexcept { return cause_; }

 private:
  LeaseVerdict verdict_;
  LeaseTimes times_;
  std::exception_ptr cause_;
};

/** No answer arrived (connection refused or reset, DNS, TLS, connect or total timeout): nothing was received. */
class NetworkError : public Error {
 public:
  /** reason: "timeout" (the connect or total timeout ran out) or "connection" (anything else). */
  explicit NetworkError(const std::string& message, std::string reason = "connection");
  const std::string& reason() const noexcept { return reason_; }

 private:
  std::string reason_;
};

/**
 * The service is unavailable: any 5xx, unsigned (verified() false: a proxy, or the server while its database is
 * down) or verified. Nothing of an unsigned one is trusted; it is no refusal, so the lease stays usable.
 */
class UnavailableError : public Error {
 public:
  UnavailableError(int status, bool verified, std::optional<std::string> code, std::optional<std::int64_t> retry_after);
  int status() const noexcept { return status_; }
  bool verified() const noexcept { return verified_; }
  /** The verified answer's code; nullopt when unverified. */
  const std::optional<std::string>& code() const noexcept { return code_; }
  /** Seconds from a Retry-After header, when one came. */
  const std::optional<std::int64_t>& retry_after() const noexcept { return retry_after_; }

 private:
  int status_;
  bool verified_;
  std::optional<std::string> code_;
  std::optional<std::int64_t> retry_after_;
};

// ---------------------------------------------------------------- pure verification (the shared test vectors)

/** What the client pins: the app id and the app's public root key (base64url of 32 bytes). */
struct Pinned {
  std::string app_id;
  std::string root_public_key;
};

struct SignedRequest {
  std::string method;
  /** Path and query exactly as sent on the request line. */
  std::string target;
  Bytes body;
  std::string nonce;
  /** The headers sent (any case); only the credential headers count (credentials_sha256). */
  std::vector<std::pair<std::string, std::string>> headers;
};

/** The credential headers, in the order they are hashed into the signed bytes (docs/signing.md). */
extern const char* const CREDENTIAL_HEADERS[5];
/**
 * Hex SHA-256 over `name:value\n` for each credential header present (authorization, x-api-license-code,
 * x-api-username, x-api-password, x-hardware-id, in that order), the value's bytes with leading and
 * trailing spaces and tabs removed. No credential header: the empty hash.
 */
std::string credentials_sha256(const std::vector<std::pair<std::string, std::string>>& headers);

struct ReceivedAnswer {
  int status = 0;
  /** Absent headers are nullopt; an empty header is present (and malformed). */
  std::optional<std::string> signature;
  std::optional<std::string> certificate;
  /** Hex SHA-256 of the body, or a download's download_line(). */
  std::string response_line;
};

struct AnswerCheck {
  AnswerVerdict verdict = AnswerVerdict::missing_signature;
  std::optional<std::string> kid;
  /** The server's time, trusted once the verdict is ok. */
  std::optional<std::int64_t> t;
  /** The signing key's certificate validity, once the certificate verified. */
  std::optional<std::int64_t> not_after;
  std::optional<std::int64_t> not_before;
};

CertificateVerdict check_certificate(const std::string& encoded, const Pinned& pinned, std::int64_t at);
AnswerCheck verify_answer(const Pinned& pinned, const std::set<std::string>& retired, const SignedRequest& request,
                          const ReceivedAnswer& answer);
/** The last signed line of a download: `file-sha256=<hex>; content-range=<header or empty>`. */
std::string download_line(const std::string& file_sha256_hex, const std::optional<std::string>& content_range);

/** Issue 24: an entitlement in a lease: its code and the latest end of its live grants at iat (nullopt: no end). */
struct LeaseEntitlement {
  std::string code;
  std::optional<std::int64_t> until;
};

struct LeasePayload {
  std::string lease_id;
  std::int64_t seq = 0;
  std::string app_id;
  std::string user_id;
  std::string hwid_hash;
  bool is_lifetime = false;
  std::optional<std::int64_t> active_until;
  std::int64_t iat = 0;
  std::int64_t renew_after = 0;
  std::int64_t exp = 0;
  std::int64_t max_offline_runtime_s = 0;
  /** Issue 24: sorted by code; empty in a lease of an older server (the field absent). */
  std::vector<LeaseEntitlement> entitlements;
  /** Issue 24: a trial user's lease (false when absent). */
  bool is_trial = false;
};

/** The codes of a (verified) lease live at trusted time `now`: present and (until none or now < until), sorted. */
std::vector<std::string> live_entitlements(const LeasePayload& payload, std::int64_t now);

/** The client's rollback state as the check sees it. */
struct RollbackState {
  std::int64_t highest_trusted_time = 0;
  std::int64_t highest_seq = 0;
  std::int64_t runtime_used_ms = 0;
  bool dropped = false;
  /** The highest server time verified: a lease whose certificate ended more than 5 minutes before it is key_expired. */
  std::int64_t max_server_time = 0;
};

struct LeaseCheckInput {
  Pinned pinned;
  std::set<std::string> retired;
  std::string hardware_id;
  RollbackState state;
  /** Server-aligned time, unix ms. */
  std::int64_t now = 0;
  /** The stored state failed its MAC or its copies disagree. */
  bool tampered = false;
};

struct LeaseCheck {
  LeaseVerdict verdict = LeaseVerdict::malformed;
  std::optional<LeasePayload> payload;
  std::optional<std::string> kid;
  /** ok only: now >= renew_after. */
  bool renew_due = false;
};

/** The lease file decoded (not checked); nullopt if malformed. */
std::optional<LeasePayload> parse_lease_payload(const std::string& file);
LeaseCheck check_lease(const std::string& file, const LeaseCheckInput& input);

/** How far the local clock may lag the highest trusted time before it is a rollback. */
constexpr std::int64_t ROLLBACK_TOLERANCE_MS = 5 * 60 * 1000;

// small helpers, public for apps and tests
std::string sha256_hex(const Bytes& bytes);
std::string sha256_hex(const std::string& text);
std::optional<Bytes> b64url_decode(const std::string& text);
std::string b64url_encode(const Bytes& bytes);
/** A fresh nonce: 32 base64url characters (24 random bytes). */
std::string new_nonce();

// ---------------------------------------------------------------- storage

/** Where the lease and the rollback state live. Pluggable; the default writes files in the user's app-data folders. */
class LeaseStore {
 public:
  virtual ~LeaseStore() = default;
  virtual std::optional<std::string> read_lease() = 0;
  virtual void write_lease(const std::string& file) = 0;
  /** Two slots: the same MAC'd record goes to both; a disagreement is tampering. */
  virtual std::optional<std::string> read_state(int slot) = 0;
  virtual void write_state(int slot, const std::string& record) = 0;
  /**
   * Held (until the returned handle is released) while the SDK re-reads, merges and writes the state, so
   * several instances of one app on one machine share it. Default: no lock (one instance at a time).
   */
  virtual std::shared_ptr<void> lock() { return nullptr; }
};

/** Keeps everything in memory: tests, or apps that must not touch the disk. Several clients on one store take turns. */
class MemoryLeaseStore : public LeaseStore {
 public:
  std::optional<std::string> lease;
  std::optional<std::string> states[2];
  std::optional<std::string> read_lease() override { return lease; }
  void write_lease(const std::string& file) override { lease = file; }
  std::optional<std::string> read_state(int slot) override { return states[slot ? 1 : 0]; }
  void write_state(int slot, const std::string& record) override { states[slot ? 1 : 0] = record; }
  std::shared_ptr<void> lock() override;

 private:
  std::shared_ptr<void> mutex_;
};

struct Folders {
  /** The lease and the first state copy. */
  std::string data;
  /** The second state copy. */
  std::string state;
};

/**
 * The default folders, each under tollgate/<app_id>/: %APPDATA% (and %LOCALAPPDATA%) on Windows,
 * ~/Library/Application Support (and ~/Library/Preferences) on macOS, $XDG_DATA_HOME or
 * ~/.local/share (and $XDG_STATE_HOME or ~/.local/state) elsewhere. `platform`: "win32", "darwin", "linux".
 */
Folders app_data_folders(const std::string& app_id, const std::string& platform,
                         const std::function<std::optional<std::string>(const std::string&)>& env,
                         const std::string& home);
/** The folders for this machine's OS, environment and home directory. */
Folders app_data_folders(const std::string& app_id);

/** A lock file older than this is left over from a crashed process and is taken over (ms). */
constexpr std::int64_t LOCK_STALE_MS = 10000;
/** How long to wait for the lock before taking it over anyway: a stuck holder must not freeze the app (ms). */
constexpr std::int64_t LOCK_WAIT_MS = 15000;

/**
 * Files: <data>/lease.tollgate, <data>/state.json, <state>/state.json; written atomically, mode 0600, folders 0700.
 * lock(): <data>/state.lock, created exclusively and removed on release (between processes and threads).
 */
class FileLeaseStore : public LeaseStore {
 public:
  explicit FileLeaseStore(Folders folders);
  static std::shared_ptr<FileLeaseStore> for_app(const std::string& app_id);
  const Folders& folders() const { return folders_; }
  std::optional<std::string> read_lease() override;
  void write_lease(const std::string& file) override;
  std::optional<std::string> read_state(int slot) override;
  void write_state(int slot, const std::string& record) override;
  std::shared_ptr<void> lock() override;

 private:
  Folders folders_;
};

// ---------------------------------------------------------------- hardware id

/** The raw OS machine id: /etc/machine-id or /var/lib/dbus/machine-id, IOPlatformUUID (macOS), MachineGuid (Windows). Throws Error if none. */
std::string os_machine_id();
/** hex SHA-256 of `tollgate/hwid/v1\n<app_id>\n<machine id>`: stable per app and machine, never the raw id. */
std::string hardware_id(const std::string& app_id);
/** The same from a machine id you read yourself. */
std::string hardware_id_from(const std::string& app_id, const std::string& machine_id);

// ---------------------------------------------------------------- API types (from /openapi.json)

struct ApplicationVariable {
  std::string name;
  std::string value;
};
struct ApplicationFile {
  std::string id;
  std::string name;
  std::string mime_type;
  bool is_encrypted = false;
};
struct Application {
  std::string id;
  std::string name;
  std::vector<ApplicationVariable> variables;
  std::vector<ApplicationFile> files;
  /** The variable's value, or nullopt. */
  std::optional<std::string> variable(const std::string& name) const;
};
struct Membership {
  bool is_active = false;
  bool is_lifetime = false;
  std::optional<std::string> active_until;
  /** Issue 24: the entitlement codes the user holds (sorted); empty from an older server. */
  std::vector<std::string> entitlements;
  /** Issue 24: true for a trial user. */
  bool is_trial = false;
};
struct User {
  std::string id;
  std::string username;
  Membership membership;
};
struct AppContext {
  Application application;
  /** nullopt for an anonymous request (when the application allows it). */
  std::optional<User> user;
  std::string server_time;
};
struct Activation {
  std::string id;
  std::string occurred_at;
  std::optional<std::int64_t> minutes;
  bool grants_lifetime_access = false;
  bool revokes_lifetime_access = false;
  std::string license_id;
  std::string type;
};
/** POST /redeem's answer (issue 24): the activation as activate_license() answers it, and the user after it. */
struct Redemption {
  Activation activation;
  User user;
};
struct Session {
  std::string session_token;
};
/** POST /trial's answer (issue 24): the session (kept in the client's auth, as login() does) and the trial user. */
struct Trial {
  std::string session_token;
  User user;
};
/** A floating seat (issue 25) as POST /seats or its heartbeat last answered it (times ISO-8601, server time). */
struct Seat {
  std::string id;
  std::string checked_out_at;
  std::string expires_at;
  double heartbeat_seconds = 0;
  /** The user's pool when last answered. */
  std::int64_t max = 0;
  std::int64_t in_use = 0;
  std::string server_time;
};
/** DELETE /seats' answer: released false when this device held no seat, or when an offline lease holds it. */
struct SeatRelease {
  bool released = false;
  std::string server_time;
  /**
   * When an offline lease holds the seat: the time it frees up (the lease's exp, ISO-8601); nullopt otherwise.
   * Such a seat stays taken on the server until then, whatever the device says.
   */
  std::optional<std::string> held_until;
};
/** POST /devices/reset's answer (issue 25). */
struct DeviceReset {
  std::string reset_at;
  /** When the user may reset again; nullopt when nothing limits it. */
  std::optional<std::string> next_reset_at;
  std::int64_t devices_removed = 0;
  std::string server_time;
};
enum class SeatState { none, held, lost };
/** How a seat was lost: "seat_not_found" (a verified 404), "conflict" (a verified 409), "expired" (no beat got through in time). */
struct SeatLoss {
  std::string reason;
  std::string seat_id;
  /** The refusal, or the last failed heartbeat's error (null when none failed): rethrow it to inspect it. */
  std::exception_ptr cause;
};
struct SigningKey {
  std::string kid;
  std::string certificate;
  std::string status;
};
struct KeyList {
  std::vector<SigningKey> keys;
  std::vector<std::string> retired;
};

struct PasswordCredentials {
  std::string username;
  std::string password;
};
struct CodeCredentials {
  std::string code;
};
struct SignUpRequest {
  std::string username;
  std::string password;
  std::optional<std::string> hardware_id;
};
struct SignUpWithLicenseCodeRequest {
  std::string code;
  std::optional<std::string> hardware_id;
};
struct ActivateLicenseRequest {
  std::string code;
  std::string username;
  std::string password;
  std::optional<std::string> hardware_id;
};
struct LoginRequest {
  std::variant<PasswordCredentials, CodeCredentials> credentials;
  std::optional<std::string> hardware_id;
};

/** How a call authenticates its user: a session (after login), a license code, or a username and password. */
struct SessionAuth {
  std::string session_token;
};
struct LicenseCodeAuth {
  std::string license_code;
};
struct PasswordAuth {
  std::string username;
  std::string password;
};
using UserAuth = std::variant<SessionAuth, LicenseCodeAuth, PasswordAuth>;

// ---------------------------------------------------------------- client

/**
 * Injected clocks (tests): wall clock (unix ms) and a monotonic clock (ms). An empty member (a default-constructed
 * std::function, as in `Clock{}`) means the system's clock: std::chrono::system_clock and steady_clock.
 */
struct Clock {
  std::function<std::int64_t()> now;
  std::function<std::int64_t()> monotonic;
};

/** When this SDK version was released (unix ms, 2026-11-23T00:00:00Z): the default not_before. Raised with each release. */
constexpr std::int64_t SDK_RELEASED_AT = 1795392000000LL;

struct ClientOptions {
  /** The server, e.g. https://licensing.example.com (a path prefix must reach the server unchanged: it is signed). */
  std::string base_url;
  std::string app_key;
  std::string app_secret;
  /** Pinned: the app id and the public root key printed by `tollgate keys init`. */
  std::string app_id;
  std::string root_public_key;
  /**
   * This device's id, sent as x-hardware-id / hardware_id on every call that takes one (binds leases, device
   * authentication). Default: hardware_id(app_id); on a machine without a machine id the calls go without one
   * (create_lease() then throws: a lease needs one).
   */
  std::optional<std::string> hardware_id;
  /** Default: a FileLeaseStore in the user's app-data folders. */
  std::shared_ptr<LeaseStore> lease_store;
  Clock clock;
  /** How often the key list is refreshed when no unknown kid forces it. */
  std::int64_t key_refresh_ms = 24LL * 3600 * 1000;
  /** Whole-request timeout (downloads excepted) and connect timeout. */
  long timeout_ms = 30000;
  long connect_timeout_ms = 10000;
  /** Extra CA bundle file for HTTPS (libcurl CURLOPT_CAINFO); empty: the system's. */
  std::string ca_file;
  /**
   * A floor for the server time this install has seen (unix ms), e.g. your app's build time. Default: the SDK's
   * release time (SDK_RELEASED_AT). A key that ended (5 minutes' tolerance) before it is refused from the first
   * answer on, so a leaked private key of an ended key cannot sign a back-dated answer or lease for a fresh install.
   */
  std::optional<std::int64_t> not_before;
  /**
   * Issue 25: called (on the heartbeat's thread) when a checked-out floating seat is lost; seat_state() then says
   * lost and seat_loss() why, until the next checkout_seat() or release_seat().
   */
  std::function<void(const SeatLoss&)> on_seat_lost;
  /** Release a held seat in ~Client() (errors ignored). */
  bool release_seat_on_destroy = true;
};

struct LeaseInfo {
  std::string lease_id;
  std::string user_id;
  std::int64_t seq = 0;
  bool is_lifetime = false;
  std::optional<std::int64_t> active_until;
  std::int64_t issued_at = 0;
  /** The lease stops working offline at this time (unix ms, server time). */
  std::int64_t expires_at = 0;
  std::int64_t renew_after = 0;
  /** Past renew_after: go online and call create_lease() when you can. */
  bool renew_due = false;
  std::int64_t runtime_used_ms = 0;
  std::int64_t runtime_budget_ms = 0;
  /** Issue 24: the lease's entitlements; empty in an older lease. */
  std::vector<LeaseEntitlement> entitlements;
  bool is_trial = false;
};

/** What check_access() found: online (a verified 2xx) or the stored lease (no answer from Tollgate arrived). */
struct Access {
  enum class Source { online, lease };
  Source source = Source::online;
  /** source online: the verified app context. */
  std::optional<AppContext> context;
  /** source lease: the lease that was checked. */
  std::optional<LeaseInfo> lease;
  /** source lease: the online failure (NetworkError, UnavailableError, or VerificationError missing_signature). */
  std::exception_ptr cause;
};

struct DownloadResult {
  std::string path;
  std::uint64_t size = 0;
  std::string sha256;
  /** True when earlier bytes were kept and only the rest was fetched. */
  bool resumed = false;
};

struct DownloadOptions {
  /** received bytes, total (0 when unknown). */
  std::function<void(std::uint64_t, std::uint64_t)> on_progress;
};

class Client {
 public:
  explicit Client(ClientOptions options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  /** The user of the calls that need one; set by login() (or by you), cleared by logout(). */
  std::optional<UserAuth> auth;

  User sign_up(const SignUpRequest& body);
  User sign_up_with_license_code(const SignUpWithLicenseCodeRequest& body);
  Activation activate_license(const ActivateLicenseRequest& body);
  /**
   * POST /redeem (issue 24): the user of the client's auth (a trial's session too, which has no password for
   * activate_license()) redeems a license code, and a trial converts; the answer's user is remembered as
   * get_app_context()'s is. Refusals (ApiError): 401 invalid_license or license_used, 403 banned, 422. They never
   * drop the lease: a bad code says nothing about the user.
   */
  Redemption redeem(const std::string& code);
  /** With this auth. */
  Redemption redeem(const std::string& code, const std::optional<UserAuth>& auth);
  /** Logs in; the session is then used by the calls that need a user. */
  Session login(const LoginRequest& body);
  /** Revokes the session (needs one) and clears auth. */
  void logout();
  /** The application (variables, files) and the user, with the client's auth. */
  AppContext get_app_context();
  /** With this auth (nullopt: anonymous). */
  AppContext get_app_context(const std::optional<UserAuth>& auth);
  /** Downloads a file to `destination`, resuming an interrupted download, checked against the signed file hash. */
  DownloadResult download_file(const std::string& file_id, const std::string& destination,
                               const DownloadOptions& options = {});
  DownloadResult download_file(const std::string& file_id, const std::string& destination,
                               const std::optional<UserAuth>& auth, const DownloadOptions& options = {});
  /** Fetches an offline lease for this user and device and keeps it in the lease store. */
  LeaseInfo create_lease();
  LeaseInfo create_lease(const std::optional<UserAuth>& auth);
  /** Checks the stored lease without network; throws LeaseError unless it is good. Call it periodically while offline. */
  LeaseInfo check_lease();
  /**
   * Online first, the lease when no answer from Tollgate arrived (docs/signing.md, "The SDK error model"): a
   * verified 2xx is source online (and, best effort, renews the lease when none is stored or it is due); a
   * NetworkError, an UnavailableError or a VerificationError missing_signature falls back to check_lease(), whose
   * LeaseError then carries that failure as cause(). A RefusedError or any other VerificationError is thrown.
   */
  Access check_access();
  Access check_access(const std::optional<UserAuth>& auth);
  /** GET /signing_keys; also refreshes the retired kids the client refuses. */
  KeyList get_signing_keys();
  /** This device's hardware id (the option, or the OS machine id hashed with the app id). */
  std::string device_id();

  // ---- entitlements and trials (issue 24)
  /**
   * Whether the user holds entitlement `code` now: online from the last verified answer carrying the user
   * (get_app_context(), check_access(), sign-up, start_trial()), offline from the lease the last check_lease() (or
   * check_access() falling back) found good: the code present and its `until` not reached on the trusted clock.
   * False when neither is known: an unsigned or unverified answer never grants anything.
   */
  bool has(const std::string& code);
  /** The entitlement codes the user holds now (sorted), by the rule of has(). */
  std::vector<std::string> entitlements();
  /** Whether the user is a trial user: membership.is_trial online, the lease's is_trial offline. */
  bool is_trial();
  /** POST /trial: starts, or resumes, this device's trial; the session becomes `auth`, as after login(). */
  Trial start_trial(const std::optional<std::string>& hardware_id = std::nullopt,
                    const std::optional<std::string>& email = std::nullopt);

  // ---- floating seats (issue 25)
  /**
   * POST /seats: checks a seat out for this device (the same seat again if it holds one) and starts the heartbeat on
   * a thread (POST /seats/heartbeat at a third of heartbeat_seconds; a failed beat retried before the seat expires).
   * A lost seat (404 seat_not_found, a 409, or the expiry passed with no beat through) calls on_seat_lost and
   * seat_state() says lost. 409 seats_exhausted (body(): in_use, max, next_free_at) and seats_not_enabled throw.
   */
  Seat checkout_seat();
  Seat checkout_seat(const std::optional<UserAuth>& auth);
  SeatState seat_state() const;
  /** The seat held now, as its last heartbeat confirmed it. */
  std::optional<Seat> seat() const;
  /** Why the seat was lost, while seat_state() is lost. */
  std::optional<SeatLoss> seat_loss() const;
  /**
   * DELETE /seats: stops the heartbeat and releases this device's seat. A seat an offline lease holds stays taken on
   * the server until the lease ends (issue 25): the answer is released false with held_until, and the stored lease
   * is kept, so the device may go on offline until then. Any other answer (released, or no seat) drops the stored
   * lease; a failed call (it throws) keeps it.
   */
  SeatRelease release_seat();
  SeatRelease release_seat(const std::optional<UserAuth>& auth);

  // ---- device self-reset (issue 25)
  /**
   * POST /devices/reset: frees the user's devices. It ends every session of the user: a session `auth` used for it is
   * cleared. Refusals (ApiError): 429 reset_cooldown (retry_after(), last_reset_at()), 403 reset_disabled, banned.
   */
  DeviceReset reset_devices();
  DeviceReset reset_devices(const std::optional<UserAuth>& auth);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tollgate
