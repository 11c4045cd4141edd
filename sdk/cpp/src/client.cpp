// Client: a typed call per client endpoint, each sent with a fresh nonce and verified against the
// pinned root before its body is parsed; the offline side (leases); resumable verified downloads.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "heartbeat.hpp"
#include "internal.hpp"

namespace fs = std::filesystem;

namespace tollgate {

using namespace detail;

std::optional<std::string> Application::variable(const std::string& name) const {
  for (const auto& v : variables)
    if (v.name == name) return v.value;
  return std::nullopt;
}

namespace {

std::optional<std::string> opt_string(const json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  return j.at(key).get<std::string>();
}

User user_of(const json& j) {
  User u;
  u.id = j.at("id").get<std::string>();
  u.username = j.at("username").get<std::string>();
  const json& m = j.at("membership");
  u.membership.is_active = m.at("is_active").get<bool>();
  u.membership.is_lifetime = m.at("is_lifetime").get<bool>();
  u.membership.active_until = opt_string(m, "active_until");
  if (m.contains("entitlements") && m["entitlements"].is_array())
    for (const auto& e : m["entitlements"]) u.membership.entitlements.push_back(e.get<std::string>());
  std::sort(u.membership.entitlements.begin(), u.membership.entitlements.end());
  u.membership.is_trial = m.contains("is_trial") && m["is_trial"].is_boolean() && m["is_trial"].get<bool>();
  return u;
}

Seat seat_of(const json& j) {
  Seat s;
  const json& seat = j.at("seat");
  s.id = seat.at("id").get<std::string>();
  s.checked_out_at = seat.at("checked_out_at").get<std::string>();
  s.expires_at = seat.at("expires_at").get<std::string>();
  s.heartbeat_seconds = seat.at("heartbeat_seconds").get<double>();
  s.max = j.at("seats").at("max").get<std::int64_t>();
  s.in_use = j.at("seats").at("in_use").get<std::int64_t>();
  s.server_time = j.at("server_time").get<std::string>();
  return s;
}

AppContext app_context_of(const json& j) {
  AppContext c;
  const json& a = j.at("application");
  c.application.id = a.at("id").get<std::string>();
  c.application.name = a.at("name").get<std::string>();
  for (const auto& v : a.at("variables"))
    c.application.variables.push_back({v.at("name").get<std::string>(), v.at("value").get<std::string>()});
  for (const auto& f : a.at("files"))
    c.application.files.push_back({f.at("id").get<std::string>(), f.at("name").get<std::string>(),
                                   f.at("mime_type").get<std::string>(), f.at("is_encrypted").get<bool>()});
  if (j.contains("user") && !j["user"].is_null()) c.user = user_of(j["user"]);
  c.server_time = j.at("server_time").get<std::string>();
  return c;
}

Activation activation_of(const json& j) {
  Activation a;
  a.id = j.at("id").get<std::string>();
  a.occurred_at = j.at("occurred_at").get<std::string>();
  if (j.contains("minutes") && !j["minutes"].is_null()) a.minutes = j["minutes"].get<std::int64_t>();
  a.grants_lifetime_access = j.at("grants_lifetime_access").get<bool>();
  a.revokes_lifetime_access = j.at("revokes_lifetime_access").get<bool>();
  a.license_id = j.at("license_id").get<std::string>();
  a.type = j.at("type").get<std::string>();
  return a;
}

LeaseInfo info_of(const LeasePayload& p, bool renew_due, std::int64_t used) {
  LeaseInfo i;
  i.lease_id = p.lease_id;
  i.user_id = p.user_id;
  i.seq = p.seq;
  i.is_lifetime = p.is_lifetime;
  i.active_until = p.active_until;
  i.issued_at = p.iat;
  i.expires_at = p.exp;
  i.renew_after = p.renew_after;
  i.renew_due = renew_due;
  i.runtime_used_ms = used;
  i.runtime_budget_ms = p.max_offline_runtime_s * 1000;
  i.entitlements = p.entitlements;
  i.is_trial = p.is_trial;
  return i;
}

}  // namespace

struct Client::Impl {
  ClientOptions o;
  SystemClock clock;
  Pinned pinned;
  std::optional<std::string> hwid_cache;
  std::shared_ptr<LeaseStore> store_cache;
  Memory memory;
  Transport transport;

  /**
   * Issue 21.2: whose credentials are whose, in memory, for the refusals that name nobody (invalid_credentials,
   * invalid_license). The credential digest (credentials_sha256 of the headers sent) of every verified 2xx that
   * named its user, and the digest of the request that stored the lease.
   */
  std::map<std::string, std::string> users_by_credentials;
  std::optional<std::string> lease_credentials;
  /** A verified leases_disabled: check_access() stops trying to renew. */
  bool leases_disabled = false;

  /**
   * Issue 24: what has() answers from: the user of the last verified answer carrying one (online), or the lease the
   * last check found good (offline); neither after a verified refusal, a failed lease check or logout().
   */
  std::optional<User> entitled_user;
  std::optional<LeaseInfo> entitled_lease;
  void entitled_by(const User& u) {
    entitled_user = u;
    entitled_lease.reset();
  }
  void entitled_by(const LeaseInfo& l) {
    entitled_lease = l;
    entitled_user.reset();
  }
  void entitled_by_nothing() {
    entitled_user.reset();
    entitled_lease.reset();
  }

  /**
   * Issue 25: the seat's heartbeat runs on its own thread with its own Memory and Transport over the same store (as a
   * second instance of the app would), so it never shares unlocked state with the app's calls.
   */
  std::unique_ptr<Memory> hb_memory;
  std::unique_ptr<Transport> hb_transport;
  mutable std::mutex seat_mutex;
  std::unique_ptr<Heartbeat> heartbeat;
  std::optional<SeatLoss> loss;
  /** The credentials the seat was checked out with: ~Client() releases it with them. */
  std::optional<UserAuth> seat_auth;

  ~Impl() {
    bool held = false;
    {
      std::lock_guard<std::mutex> lock(seat_mutex);
      held = heartbeat && heartbeat->running();
    }
    if (held && o.release_seat_on_destroy) {
      try {
        release_seat(seat_auth, true);
      } catch (...) {
        // The server frees the seat once its heartbeats stop.
      }
    }
    stop_heartbeat();
  }

  void stop_heartbeat() {
    std::unique_ptr<Heartbeat> hb;
    {
      std::lock_guard<std::mutex> lock(seat_mutex);
      hb = std::move(heartbeat);
    }
    if (hb) hb->stop();
    hb.reset();  // joins after an in-flight beat
  }

  std::vector<std::pair<std::string, std::string>> seat_headers(const std::optional<UserAuth>& auth) {
    auto headers = user_headers(auth);
    if (!device_id()) headers.emplace_back("x-hardware-id", hwid());  // throws: a seat is this device's
    return headers;
  }

  Seat checkout(const std::optional<UserAuth>& auth) {
    const auto headers = seat_headers(auth);
    const std::int64_t sent_at = clock.monotonic();
    Seat first = typed([&] { return seat_of(call({"POST", "/seats", std::nullopt, headers, false})); });
    stop_heartbeat();
    if (!hb_transport) {
      hb_memory = std::make_unique<Memory>([this] {
        auto s = store();
        return std::make_pair(s, std::make_shared<StateKeeper>(s, o.app_id, hwid()));
      });
      hb_transport = std::make_unique<Transport>(transport.options(), *hb_memory);
    }
    auto beat = [this, headers]() {
      const std::int64_t at = clock.monotonic();
      const Verified res = hb_transport->send({"POST", "/seats/heartbeat", std::nullopt, headers, false});
      return std::make_pair(typed([&] { return seat_of(json::parse(res.body.begin(), res.body.end())); }), at);
    };
    std::lock_guard<std::mutex> lock(seat_mutex);
    loss.reset();
    seat_auth = auth;
    heartbeat = std::make_unique<Heartbeat>(
        first, sent_at, beat, [this] { return clock.monotonic(); },
        [this](const SeatLoss& l) {
          {
            std::lock_guard<std::mutex> guard(seat_mutex);
            loss = l;
          }
          if (o.on_seat_lost) o.on_seat_lost(l);
        });
    return first;
  }

  SeatRelease release_seat(const std::optional<UserAuth>& auth, bool) {
    stop_heartbeat();
    {
      std::lock_guard<std::mutex> lock(seat_mutex);
      loss.reset();
    }
    const json j = call({"DELETE", "/seats", std::nullopt, seat_headers(auth), false});
    SeatRelease answer = typed([&] { return SeatRelease{j.at("released").get<bool>(), j.at("server_time").get<std::string>(), opt_string(j, "held_until")}; });
    // A seat an offline lease holds stays taken until held_until: the lease is kept, so the device may go on offline
    // until then. Released, or no seat: the server counts none for this device any more, and the lease is dropped.
    if (!answer.held_until && store()->read_lease()) memory.update([](ClientState& s) { s.dropped = true; });
    return answer;
  }

  explicit Impl(ClientOptions options)
      : o(std::move(options)),
        clock{o.clock},
        pinned{o.app_id, o.root_public_key},
        memory([this] {
          auto s = store();
          return std::make_pair(s, std::make_shared<StateKeeper>(s, o.app_id, hwid()));
        }),
        transport(TransportOptions{o.base_url, o.app_key, o.app_secret, pinned, clock, o.key_refresh_ms, o.timeout_ms,
                                   o.connect_timeout_ms, o.ca_file, o.not_before.value_or(SDK_RELEASED_AT)},
                  memory) {
    transport.about_lease_user = [this](const Outgoing& req, const std::string& code, const std::optional<std::string>& user_id) {
      return about_lease_user(req, code, user_id);
    };
  }

  void remember(const std::vector<std::pair<std::string, std::string>>& headers, const std::string& user_id) {
    users_by_credentials[credentials_sha256(headers)] = user_id;
  }

  /**
   * Whether a verified refusal with a drop code is about the stored lease's user (docs/signing.md, issue 21.2): the
   * signed `user_id` decides when the server named one; none and `banned` is an IP or hardware-id ban, i.e. this
   * machine; none otherwise (invalid_credentials, invalid_license) only when the refused credentials are known in
   * this process to be the lease user's, since they identified nobody to the server.
   */
  bool about_lease_user(const Outgoing& req, const std::string& code, const std::optional<std::string>& user_id) {
    const auto file = store()->read_lease();
    const auto payload = file ? parse_lease_payload(*file) : std::nullopt;
    if (!payload) return true;  // nothing (usable) to keep: the drop changes nothing a new lease will not reset
    if (user_id) return *user_id == payload->user_id;
    if (code == "banned") return true;
    const std::string digest = credentials_sha256(req.headers);
    if (lease_credentials == digest) return true;
    const auto it = users_by_credentials.find(digest);
    return it != users_by_credentials.end() && it->second == payload->user_id;
  }

  std::string hwid() {
    if (!hwid_cache) hwid_cache = o.hardware_id ? *o.hardware_id : hardware_id(o.app_id);
    return *hwid_cache;
  }

  std::shared_ptr<LeaseStore> store() {
    if (!store_cache) store_cache = o.lease_store ? o.lease_store : FileLeaseStore::for_app(o.app_id);
    return store_cache;
  }

  json call(const Outgoing& req) {
    const Verified res = transport.send(req);
    // Parsed only now: the bytes were verified first.
    if (res.body.empty()) return json();
    try {
      return json::parse(res.body.begin(), res.body.end());
    } catch (const json::exception& e) {
      throw Error(std::string("tollgate: the verified answer is not JSON: ") + e.what());
    }
  }

  template <typename F>
  static auto typed(F&& f) -> decltype(f()) {
    try {
      return f();
    } catch (const json::exception& e) {
      throw Error(std::string("tollgate: unexpected answer shape: ") + e.what());
    }
  }

  /**
   * The hardware id for a call that takes one: the app's, else the default hardware_id(app_id) (on every such call,
   * so device authentication sees the same id on login as on /lease). None only when the OS has no machine id and
   * the app gave none: the call then goes without, as the server allows.
   */
  std::optional<std::string> device_id() {
    try {
      return hwid();
    } catch (const Error&) {
      return std::nullopt;
    }
  }

  void with_hardware(ordered_json& body, const std::optional<std::string>& hardware_id) {
    if (hardware_id)
      body["hardware_id"] = *hardware_id;
    else if (auto id = device_id())
      body["hardware_id"] = *id;
  }

  std::vector<std::pair<std::string, std::string>> user_headers(const std::optional<UserAuth>& auth) {
    std::vector<std::pair<std::string, std::string>> h;
    if (auth) {
      if (auto* s = std::get_if<SessionAuth>(&*auth)) h.emplace_back("authorization", "Bearer " + s->session_token);
      if (auto* l = std::get_if<LicenseCodeAuth>(&*auth)) h.emplace_back("x-api-license-code", l->license_code);
      if (auto* p = std::get_if<PasswordAuth>(&*auth)) {
        h.emplace_back("x-api-username", p->username);
        h.emplace_back("x-api-password", p->password);
      }
    }
    if (auto id = device_id()) h.emplace_back("x-hardware-id", *id);
    return h;
  }

  // ---- offline
  LeaseInfo keep(const std::string& file, std::int64_t t) {
    LeaseInfo info;
    memory.locked([&] {
      const ClientState state = memory.state();
      LeaseCheckInput in;
      in.pinned = pinned;
      in.retired = std::set<std::string>(state.retired.begin(), state.retired.end());
      in.hardware_id = hwid();
      in.state = RollbackState{t, state.highest_seq, 0, false, std::max(transport.max_server_time(), t)};
      in.now = clock.now() + state.clock_offset_ms;
      const LeaseCheck check = tollgate::check_lease(file, in);
      if (check.verdict != LeaseVerdict::ok) throw LeaseError(check.verdict);
      const LeasePayload& p = *check.payload;
      store()->write_lease(file);
      memory.update(
          [&](ClientState& s) {
            s.highest_seq = p.seq;
            s.highest_trusted_time = std::max(t, p.iat);
          },
          true);
      memory.last_tick.reset();
      info = info_of(p, check.renew_due, 0);
    });
    return info;
  }

  LeaseInfo check() {
    LeaseInfo info;
    // Under the store's lock, with what other instances of the app wrote merged in (a drop holds for all).
    memory.locked([&] {
      const auto file = store()->read_lease();
      if (!file) throw LeaseError(LeaseVerdict::no_lease);
      const ClientState state = memory.state();
      const bool tampered = memory.tampered();
      // Runtime since the previous check in this process (none before the first).
      const std::int64_t tick = clock.monotonic();
      const std::int64_t used =
          state.runtime_used_ms + (memory.last_tick ? std::max<std::int64_t>(0, tick - *memory.last_tick) : 0);
      memory.last_tick = tick;
      LeaseCheckInput in;
      in.pinned = pinned;
      in.retired = std::set<std::string>(state.retired.begin(), state.retired.end());
      in.hardware_id = hwid();
      in.state =
          RollbackState{state.highest_trusted_time, state.highest_seq, used, state.dropped, transport.max_server_time()};
      in.now = clock.now() + state.clock_offset_ms;
      in.tampered = tampered;
      const LeaseCheck check = tollgate::check_lease(*file, in);
      const bool ok = check.verdict == LeaseVerdict::ok;
      if (check.payload && check.payload->seq >= state.highest_seq) {
        const std::int64_t now = in.now;
        memory.update([&](ClientState& s) {
          s.runtime_used_ms = std::max(s.runtime_used_ms, used);
          // The local clock only counts as trusted time while it moves forward (and the lease is good).
          if (ok) s.highest_trusted_time = std::max(s.highest_trusted_time, now);
        });
      }
      if (!ok) {
        LeaseTimes times;
        if (check.payload) {
          times.expires_at = check.payload->exp;
          if (check.payload->max_offline_runtime_s > 0)
            times.runtime_left = std::max<std::int64_t>(0, check.payload->max_offline_runtime_s * 1000 - used);
        } else if (auto parsed = parse_lease_payload(*file)) {
          times.expires_at = parsed->exp;
        }
        if (state.highest_trusted_time > 0 && !tampered) times.last_seen_time = state.highest_trusted_time;
        throw LeaseError(check.verdict, times);
      }
      info = info_of(*check.payload, check.renew_due, used);
    });
    return info;
  }

  // ---- downloads: bytes to <dest>.part, renamed to <dest> once the whole file's SHA-256 matches the signed hash
  DownloadResult download(const Outgoing& base, const std::string& dest, const DownloadOptions& opts) {
    static const std::regex ETAG("^\"([0-9a-f]{64})\"$");
    static const std::regex RANGE_START("^bytes ([0-9]+)-");
    static const std::regex RANGE_TOTAL("/([0-9]+)$");
    const fs::path part = fs::u8path(dest + ".part");
    const fs::path meta = fs::u8path(dest + ".part.json");
    auto discard = [&] {
      std::error_code ec;
      fs::remove(part, ec);
      fs::remove(meta, ec);
    };

    // What an earlier attempt left: bytes and the ETag they belong to (If-Range: the server starts over if the file changed).
    std::uint64_t offset = 0;
    std::optional<std::string> etag;
    try {
      std::ifstream in(meta);
      if (!in) throw std::runtime_error("no meta");
      json m = json::parse(in);
      if (m.contains("etag") && m["etag"].is_string()) etag = m["etag"].get<std::string>();
      offset = fs::file_size(part);
    } catch (const std::exception&) {
      discard();
      offset = 0;
      etag.reset();
    }
    Outgoing req = base;
    if (offset > 0 && etag && !etag->empty()) {
      req.headers.emplace_back("range", "bytes=" + std::to_string(offset) + "-");
      req.headers.emplace_back("if-range", *etag);
    }

    bool writing = false;
    Bytes error_body;
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> out(nullptr, std::fclose);
    std::optional<std::string> claimed, content_range;
    std::uint64_t received = 0, start = 0, total = 0;
    Streaming streaming;
    streaming.long_transfer = true;
    streaming.on_head = [&](const SignedRequest& sent, const HttpAnswer& head) {
      if (head.status != 200 && head.status != 206) return;
      content_range = head.header("content-range");
      const auto etag_header = head.header("etag");
      std::smatch m;
      if (etag_header && std::regex_match(*etag_header, m, ETAG)) claimed = m[1].str();
      // With the ETag the signature is checked now, before a byte is written; without it, once the file is whole.
      if (claimed) transport.verify(sent, head, download_line(*claimed, content_range));
      if (content_range && std::regex_search(*content_range, m, RANGE_TOTAL))
        total = std::stoull(m[1].str());
      else if (auto len = head.header("content-length"))
        total = std::strtoull(len->c_str(), nullptr, 10);
      if (head.status == 206) {
        const bool parsed = content_range && std::regex_search(*content_range, m, RANGE_START);
        if (!parsed || std::stoull(m[1].str()) != offset) {
          discard();
          throw Error("tollgate: the server resumed at " + content_range.value_or("?") + ", not at byte " +
                      std::to_string(offset) + "; retry the download");
        }
        start = offset;
      }
      {
        ordered_json m2;
        m2["etag"] = etag_header ? json(*etag_header) : json(nullptr);
        std::ofstream mf(meta, std::ios::trunc);
        mf << m2.dump();
        if (!mf) throw Error("tollgate: cannot write " + meta.string());
      }
      out.reset(std::fopen(part.string().c_str(), start == 0 ? "wb" : "ab"));
      if (!out) throw Error("tollgate: cannot write " + part.string());
      received = start;
      writing = true;
    };
    streaming.on_body = [&](const char* data, std::size_t n) {
      if (!writing) {
        error_body.insert(error_body.end(), data, data + n);
        return;
      }
      if (std::fwrite(data, 1, n, out.get()) != n) throw Error("tollgate: cannot write " + part.string());
      received += n;
      if (opts.on_progress) opts.on_progress(received, total);
    };
    HttpAnswer head;
    const SignedRequest sent = transport.fetch(req, streaming, head);
    if (!writing) {
      transport.settle(base, sent, Verified{head.status, head, error_body, 0});
      throw Error("tollgate: the download answered " + std::to_string(head.status) + " without a file");
    }
    if (std::fclose(out.release()) != 0) throw Error("tollgate: cannot write " + part.string());

    // The whole assembled file, old bytes and new, against the hash the server signed.
    Sha256 hash;
    {
      std::ifstream in(part, std::ios::binary);
      std::vector<char> buf(1 << 16);
      while (in) {
        in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        hash.update(buf.data(), static_cast<std::size_t>(in.gcount()));
      }
    }
    const std::string actual = hash.hex_digest();
    try {
      if (!claimed)
        transport.verify(sent, head, download_line(actual, content_range));
      else if (actual != *claimed)
        throw VerificationError(AnswerVerdict::bad_signature, head.status);
    } catch (...) {
      discard();
      throw;
    }
    std::error_code ec;
    fs::rename(part, fs::u8path(dest), ec);
    if (ec) throw Error("tollgate: cannot write " + dest + ": " + ec.message());
    fs::remove(meta, ec);
    return DownloadResult{dest, received, actual, start > 0};
  }
};

Client::Client(ClientOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Client::~Client() = default;

User Client::sign_up(const SignUpRequest& body) {
  ordered_json j{{"username", body.username}, {"password", body.password}};
  impl_->with_hardware(j, body.hardware_id);
  User user = Impl::typed([&] { return user_of(impl_->call({"POST", "/sign_up", j.dump(), {}, false})); });
  impl_->remember(impl_->user_headers(PasswordAuth{body.username, body.password}), user.id);
  impl_->entitled_by(user);
  return user;
}

User Client::sign_up_with_license_code(const SignUpWithLicenseCodeRequest& body) {
  ordered_json j{{"code", body.code}};
  impl_->with_hardware(j, body.hardware_id);
  User user =
      Impl::typed([&] { return user_of(impl_->call({"POST", "/sign_up_with_license_code", j.dump(), {}, false})); });
  impl_->remember(impl_->user_headers(LicenseCodeAuth{body.code}), user.id);
  impl_->entitled_by(user);
  return user;
}

Activation Client::activate_license(const ActivateLicenseRequest& body) {
  ordered_json j{{"code", body.code}, {"username", body.username}, {"password", body.password}};
  impl_->with_hardware(j, body.hardware_id);
  const json answer = impl_->call({"POST", "/activate_license", j.dump(), {}, false});
  return Impl::typed([&] {
    if (answer.contains("user") && answer["user"].is_object()) impl_->entitled_by(user_of(answer["user"]));
    return activation_of(answer);
  });
}

Redemption Client::redeem(const std::string& code) { return redeem(code, auth); }

Redemption Client::redeem(const std::string& code, const std::optional<UserAuth>& user) {
  const auto headers = impl_->user_headers(user);
  ordered_json j{{"code", code}};
  Redemption r = Impl::typed([&] {
    const json answer = impl_->call({"POST", "/redeem", j.dump(), headers, false});
    return Redemption{activation_of(answer.at("activation")), user_of(answer.at("user"))};
  });
  impl_->remember(headers, r.user.id);
  impl_->entitled_by(r.user);  // a converted trial's entitlements, at once
  return r;
}

Session Client::login(const LoginRequest& body) {
  ordered_json credentials;
  if (auto* p = std::get_if<PasswordCredentials>(&body.credentials))
    credentials = {{"username", p->username}, {"password", p->password}};
  else
    credentials = {{"code", std::get<CodeCredentials>(body.credentials).code}};
  ordered_json j{{"credentials", credentials}};
  impl_->with_hardware(j, body.hardware_id);
  Session session = Impl::typed([&] {
    return Session{impl_->call({"POST", "/auth/login", j.dump(), {}, false}).at("session_token").get<std::string>()};
  });
  auth = SessionAuth{session.session_token};
  return session;
}

void Client::logout() {
  if (!auth || !std::holds_alternative<SessionAuth>(*auth))
    throw Error("tollgate: logout() needs a session (log in first)");
  impl_->transport.send({"POST", "/auth/logout", std::nullopt, impl_->user_headers(auth), false});
  auth.reset();
  impl_->entitled_by_nothing();
}

AppContext Client::get_app_context() { return get_app_context(auth); }

AppContext Client::get_app_context(const std::optional<UserAuth>& user) {
  const auto headers = impl_->user_headers(user);
  AppContext ctx;
  try {
    ctx = Impl::typed([&] { return app_context_of(impl_->call({"GET", "/app_context", std::nullopt, headers, true})); });
  } catch (const ApiError&) {
    // A verified refusal says this user gets nothing now: has() stops answering from an older answer.
    impl_->entitled_by_nothing();
    throw;
  }
  if (ctx.user) {
    impl_->remember(headers, ctx.user->id);
    impl_->entitled_by(*ctx.user);
  } else {
    impl_->entitled_by_nothing();
  }
  return ctx;
}

DownloadResult Client::download_file(const std::string& file_id, const std::string& destination,
                                     const DownloadOptions& options) {
  return download_file(file_id, destination, auth, options);
}

DownloadResult Client::download_file(const std::string& file_id, const std::string& destination,
                                     const std::optional<UserAuth>& user, const DownloadOptions& options) {
  Outgoing req{"GET", "/files/" + percent_encode_component(file_id) + "/download", std::nullopt, impl_->user_headers(user), true};
  return impl_->download(req, destination, options);
}

LeaseInfo Client::create_lease() { return create_lease(auth); }

LeaseInfo Client::create_lease(const std::optional<UserAuth>& user) {
  auto headers = impl_->user_headers(user);
  if (!impl_->device_id()) headers.emplace_back("x-hardware-id", impl_->hwid());  // throws: a lease needs one
  const Verified res = impl_->transport.send({"POST", "/lease", std::nullopt, headers, true});
  LeaseInfo info = impl_->keep(to_text(res.body), res.t);
  impl_->lease_credentials = credentials_sha256(headers);
  impl_->remember(headers, info.user_id);
  return info;
}

LeaseInfo Client::check_lease() {
  try {
    LeaseInfo info = impl_->check();
    impl_->entitled_by(info);
    return info;
  } catch (const LeaseError&) {
    if (impl_->entitled_lease) impl_->entitled_by_nothing();
    throw;
  }
}

Access Client::check_access() { return check_access(auth); }

Access Client::check_access(const std::optional<UserAuth>& user) {
  std::exception_ptr cause;
  try {
    Access online;
    online.context = get_app_context(user);
    // Best effort: keep a lease for the next time the network is gone (none stored, due, dropped or another user's).
    if (online.context->user && !impl_->leases_disabled) {
      try {
        const auto file = impl_->store()->read_lease();
        const auto payload = file ? parse_lease_payload(*file) : std::nullopt;
        const ClientState& state = impl_->memory.state();
        const std::int64_t now = impl_->clock.now() + state.clock_offset_ms;
        if (!payload || payload->user_id != online.context->user->id || state.dropped || now >= payload->renew_after)
          create_lease(user);
      } catch (const ApiError& e) {
        if (e.code() == "leases_disabled") impl_->leases_disabled = true;
      } catch (const std::exception&) {
        // The app runs online: a failed renewal is tried again on the next check.
      }
    }
    return online;
  } catch (const NetworkError&) {
    cause = std::current_exception();
  } catch (const UnavailableError&) {
    cause = std::current_exception();
  } catch (const VerificationError& e) {
    // Unsigned: no answer from Tollgate arrived (a captive portal, a proxy's page). Any other verdict is a forgery.
    if (e.verdict() != AnswerVerdict::missing_signature) throw;
    cause = std::current_exception();
  }
  Access offline;
  offline.source = Access::Source::lease;
  offline.cause = cause;
  try {
    offline.lease = check_lease();
  } catch (const LeaseError& e) {
    throw LeaseError(e.verdict(), LeaseTimes{e.expires_at(), e.last_seen_time(), e.runtime_left()}, cause);
  }
  return offline;
}

KeyList Client::get_signing_keys() { return impl_->transport.fetch_key_list(); }

std::string Client::device_id() { return impl_->hwid(); }

std::vector<std::string> Client::entitlements() {
  if (impl_->entitled_user) return impl_->entitled_user->membership.entitlements;
  if (!impl_->entitled_lease) return {};
  const std::int64_t now = impl_->clock.now() + impl_->memory.state().clock_offset_ms;
  const LeaseInfo& lease = *impl_->entitled_lease;
  if (now >= lease.expires_at) return {};
  LeasePayload p;
  p.entitlements = lease.entitlements;
  return live_entitlements(p, now);
}

bool Client::has(const std::string& code) {
  const auto codes = entitlements();
  return std::find(codes.begin(), codes.end(), code) != codes.end();
}

bool Client::is_trial() {
  if (impl_->entitled_user) return impl_->entitled_user->membership.is_trial;
  if (!impl_->entitled_lease) return false;
  return impl_->entitled_lease->is_trial &&
         impl_->clock.now() + impl_->memory.state().clock_offset_ms < impl_->entitled_lease->expires_at;
}

Trial Client::start_trial(const std::optional<std::string>& hardware_id, const std::optional<std::string>& email) {
  ordered_json j{{"hardware_id", hardware_id ? *hardware_id : impl_->hwid()}};
  if (email) j["email"] = *email;
  const json answer = impl_->call({"POST", "/trial", j.dump(), {}, false});
  Trial trial = Impl::typed([&] { return Trial{answer.at("session_token").get<std::string>(), user_of(answer.at("user"))}; });
  auth = SessionAuth{trial.session_token};
  impl_->entitled_by(trial.user);
  return trial;
}

Seat Client::checkout_seat() { return checkout_seat(auth); }
Seat Client::checkout_seat(const std::optional<UserAuth>& user) { return impl_->checkout(user); }

SeatState Client::seat_state() const {
  std::lock_guard<std::mutex> lock(impl_->seat_mutex);
  if (impl_->loss) return SeatState::lost;
  return impl_->heartbeat && impl_->heartbeat->running() ? SeatState::held : SeatState::none;
}

std::optional<Seat> Client::seat() const {
  std::lock_guard<std::mutex> lock(impl_->seat_mutex);
  if (!impl_->heartbeat || !impl_->heartbeat->running()) return std::nullopt;
  return impl_->heartbeat->seat();
}

std::optional<SeatLoss> Client::seat_loss() const {
  std::lock_guard<std::mutex> lock(impl_->seat_mutex);
  return impl_->loss;
}

SeatRelease Client::release_seat() { return release_seat(auth); }
SeatRelease Client::release_seat(const std::optional<UserAuth>& user) { return impl_->release_seat(user, false); }

DeviceReset Client::reset_devices() { return reset_devices(auth); }

DeviceReset Client::reset_devices(const std::optional<UserAuth>& user) {
  const json j = impl_->call({"POST", "/devices/reset", std::nullopt, impl_->user_headers(user), false});
  DeviceReset reset = Impl::typed([&] {
    return DeviceReset{j.at("reset_at").get<std::string>(), opt_string(j, "next_reset_at"),
                       j.at("devices_removed").get<std::int64_t>(), j.at("server_time").get<std::string>()};
  });
  // The reset ended every session of the user, the one it used included.
  if (user && auth && std::holds_alternative<SessionAuth>(*user) && std::holds_alternative<SessionAuth>(*auth) &&
      std::get<SessionAuth>(*user).session_token == std::get<SessionAuth>(*auth).session_token)
    auth.reset();
  return reset;
}

}  // namespace tollgate
