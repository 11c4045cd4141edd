// Internals of the Tollgate C++ SDK (not installed).
#pragma once

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sodium.h>

#include "tollgate/tollgate.hpp"

namespace tollgate::detail {

using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

// ---- encoding and crypto (encoding.cpp; libsodium)
void ensure_sodium();
Bytes to_bytes(const std::string& text);
std::string to_text(const Bytes& bytes);
std::string hex(const std::uint8_t* data, std::size_t size);
Bytes sha256(const Bytes& bytes);
bool ed25519_verify(const Bytes& public_key, const Bytes& signature, const Bytes& message);
std::string hmac_sha256_hex(const Bytes& key, const std::string& message);
bool equal_constant_time(const std::string& a, const std::string& b);

/** Incremental SHA-256 (downloads). */
class Sha256 {
 public:
  Sha256();
  void update(const void* data, std::size_t size);
  std::string hex_digest();

 private:
  crypto_hash_sha256_state state_;
};

// ---- JSON the way the other SDKs read it (JavaScript's JSON.parse semantics where it matters)
/** base64url of a UTF-8 JSON object; nullopt if it is not one. */
std::optional<json> decode_json_object(const std::string& text);
/** A JSON number that is a safe integer (|x| <= 2^53 - 1; 1.0 counts, as in JavaScript). */
std::optional<std::int64_t> safe_integer(const json& value);
bool has_exact_keys(const json& object, std::initializer_list<const char*> keys);

// ---- certificates (verify.cpp)
struct Certificate {
  std::string app_id, kid, public_key;
  std::int64_t not_before = 0, not_after = 0;
  Bytes public_key_bytes, sig_bytes;
};
std::optional<Certificate> decode_certificate(const std::string& encoded);
bool certificate_covers(const Certificate& c, std::int64_t t);
/** Steps 3 and 4: decodes, the pinned root signed it, it is this app's. verdict ok, bad_certificate or wrong_app. */
CertificateVerdict check_certificate_chain(const std::string& encoded, const Pinned& pinned, Certificate& out);
struct SignatureHeader {
  std::string kid;
  std::int64_t t = 0;
  Bytes sig;
};
std::optional<SignatureHeader> parse_signature_header(const std::string& value);

// ---- the client's memory (state.cpp)
struct ClientState : RollbackState {
  std::vector<std::string> retired;
  std::vector<std::string> known;
  std::int64_t keys_fetched_at = 0;
  std::int64_t clock_offset_ms = 0;
  std::int64_t max_server_time = 0;
  /** The newest key (by not_before) a verified answer was signed by, and the server time of that first answer. */
  std::int64_t newest_not_before = 0;
  std::int64_t newest_seen_at = 0;
};
ordered_json state_to_json(const ClientState& s);
bool contains(const std::vector<std::string>& list, const std::string& item);

struct LoadedState {
  ClientState state;
  bool tampered = false;
};

/** The rollback state in two places with an HMAC keyed by SHA-256("tollgate/state-mac/v1\n<app_id>\n<hardware_id>"). */
class StateKeeper {
 public:
  StateKeeper(std::shared_ptr<LeaseStore> store, const std::string& app_id, const std::string& hardware_id);
  LoadedState load();
  void save(const ClientState& state);

 private:
  enum class Opened { absent, bad, good };
  Opened open(const std::optional<std::string>& record, json& out);
  std::shared_ptr<LeaseStore> store_;
  Bytes key_;
};

/** What two instances know together: max of the times, seq, runtime; OR of dropped; union of the kids. */
ClientState merge(const ClientState& disk, const ClientState& mine, bool own_offset);

/**
 * The state in memory. Every write first takes the store's lock, re-reads the stored state and merges it (another
 * instance of the app may have written since), then writes both copies: two instances neither undo each other's
 * drop nor make the copies disagree.
 */
class Memory {
 public:
  explicit Memory(std::function<std::pair<std::shared_ptr<LeaseStore>, std::shared_ptr<StateKeeper>>()> open);
  /** The state as this instance knows it (merged at the last lock). */
  const ClientState& state();
  bool tampered();
  /** Runs `fn` holding the store's lock (re-entrant), with the stored state merged into memory first. */
  void locked(const std::function<void()>& fn);
  /**
   * Changes the state and writes both copies, merged with what is stored. reset: a fresh state (a new lease).
   * lazy: a time-only change, written once it moved a minute. own_offset: the change sets this instance's clock offset.
   */
  void update(const std::function<void(ClientState&)>& change, bool reset = false, bool lazy = false, bool own_offset = false);
  /** Monotonic reading of the last offline check in this process. */
  std::optional<std::int64_t> last_tick;

 private:
  void load();
  void sync();
  std::function<std::pair<std::shared_ptr<LeaseStore>, std::shared_ptr<StateKeeper>>()> open_;
  std::shared_ptr<LeaseStore> store_;
  std::shared_ptr<StateKeeper> keeper_;
  std::recursive_mutex mutex_;
  int depth_ = 0;
  bool loaded_ = false;
  bool own_offset_ = false;
  ClientState state_;
  bool tampered_ = false;
  std::int64_t last_written_time_ = 0;
};

// ---- HTTP and the signed exchange (transport.cpp)
struct HttpAnswer {
  int status = 0;
  /** Lower-case names; repeated headers joined with ", " (as fetch's Headers.get). */
  std::map<std::string, std::string> headers;
  std::optional<std::string> header(const std::string& name) const;
};

struct Outgoing {
  std::string method;  // GET or POST
  std::string path;    // path and query
  std::optional<std::string> json_body;
  std::vector<std::pair<std::string, std::string>> headers;
  bool drops_lease = false;
};

struct Verified {
  int status = 0;
  HttpAnswer answer;
  Bytes body;
  std::int64_t t = 0;
};

struct SystemClock {
  Clock clock;
  std::int64_t now() const;
  std::int64_t monotonic() const;
};

struct TransportOptions {
  std::string base_url, app_key, app_secret;
  Pinned pinned;
  SystemClock clock;
  std::int64_t key_refresh_ms = 0;
  long timeout_ms = 30000, connect_timeout_ms = 10000;
  std::string ca_file;
  /** A fresh install's floor for the highest server time (the SDK's release time, or the not_before option). */
  std::int64_t server_time_floor = 0;
};

/**
 * One HTTP exchange. `on_head` runs once the status and headers are known, before any body byte is
 * handed to `on_body` (a throw from either aborts the transfer and is rethrown).
 */
struct Streaming {
  std::function<void(const SignedRequest&, const HttpAnswer&)> on_head;
  std::function<void(const char*, std::size_t)> on_body;
  bool long_transfer = false;
};

class Transport {
 public:
  Transport(TransportOptions options, Memory& memory);
  Verified send(const Outgoing& req);
  /** Sends with a fresh nonce; the answer streams through `streaming`; returns what was sent (for verify()) and the head. */
  SignedRequest fetch(const Outgoing& req, Streaming& streaming, HttpAnswer& head);
  /** Steps 1-8 and what a verified answer teaches; throws VerificationError on any failure. */
  std::pair<std::int64_t, std::string> verify(const SignedRequest& sent, const HttpAnswer& answer, const std::string& response_line);
  KeyList fetch_key_list();
  /** The highest server time verified so far, never below the floor. */
  std::int64_t max_server_time();
  [[noreturn]] void refuse(const Outgoing& req, const Verified& answer);
  /** An answer received in full: unavailable (5xx), verified, refused (4xx) or returned with its server time. */
  Verified settle(const Outgoing& req, const SignedRequest& sent, Verified answer);
  /**
   * Whether a verified refusal with a drop code is about the stored lease's user, so that it drops the lease: given
   * the refused request, the code and the signed body's `user_id`. Unset: yes.
   */
  std::function<bool(const Outgoing&, const std::string& code, const std::optional<std::string>& user_id)> about_lease_user;
  const TransportOptions& options() const { return o_; }

 private:
  void learn(std::int64_t t, std::int64_t not_before);
  void refresh_keys(const std::optional<std::string>& unknown_kid);
  TransportOptions o_;
  Memory& memory_;
  std::map<std::string, std::int64_t> looked_up_;
  /** No key-list fetch on the way before this (monotonic): set a minute ahead by a failed one. */
  std::optional<std::int64_t> retry_at_;
  bool refreshing_ = false;
};

/** The codes of a verified refusal that drop the offline lease. */
bool drops_lease(const std::string& code);
/** Header values travel as bytes; refuse CR, LF and NUL (no header injection). */
void check_header_value(const std::string& name, const std::string& value);
std::string percent_encode_component(const std::string& text);

}  // namespace tollgate::detail
