// Issues 24 and 25 on the client: has()/entitlements()/is_trial() online and from a verified lease offline,
// start_trial(), floating seats with their heartbeat (scheduling, retries, a lost seat given to the callback and
// seen in seat_state(), release, release by the destructor) and reset_devices() with its refusals. Against the
// signed stub server of sdk/test-vectors (stub-server.mjs --run starts this program with TOLLGATE_STUB_URL set),
// which a test can make answer 404 seat_not_found, 409, or nothing signed; and the heartbeat's schedule on a fake
// clock (src/heartbeat.hpp).
#include <curl/curl.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <thread>
#include <tollgate/tollgate.hpp>

#include "../src/heartbeat.hpp"
#include "check.hpp"

using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

std::string URL, APP_ID, ROOT_KEY;

size_t collect(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

json stub(const std::string& method, const std::string& path, const json& body = nullptr) {
  CURL* c = curl_easy_init();
  std::string out;
  const std::string text = body.is_null() ? "" : body.dump();
  curl_easy_setopt(c, CURLOPT_URL, (URL + path).c_str());
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
  if (method == "POST") {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, text.c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(text.size()));
  }
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &out);
  const CURLcode rc = curl_easy_perform(c);
  curl_easy_cleanup(c);
  if (rc != CURLE_OK) throw std::runtime_error(std::string("stub: ") + curl_easy_strerror(rc));
  return json::parse(out);
}

void configure(const json& over) { stub("POST", "/_stub/config", over); }

const json DEFAULTS = {{"entitlements", {"pro"}}, {"lease_entitlements", nullptr}, {"is_trial", false}, {"old_lease", false},
                       {"heartbeat_seconds", 300}, {"max_seats", 5}, {"checkout", "ok"}, {"heartbeat", "ok"},
                       {"release", "ok"}, {"reset", "ok"}, {"trial", "ok"}};

void reset_stub() {
  configure(DEFAULTS);
  stub("POST", "/_stub/seat/expire");
}

std::vector<json> log_of(const std::string& at, const std::string& hardware_id = "") {
  std::vector<json> out;
  for (const auto& e : stub("GET", "/_stub/log"))
    if (e["method"].get<std::string>() + " " + e["path"].get<std::string>() == at &&
        (hardware_id.empty() || (e["hardware_id"].is_string() && e["hardware_id"] == hardware_id)))
      out.push_back(e);
  return out;
}

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

int counter = 0;
tollgate::ClientOptions options(const std::string& hwid = "") {
  tollgate::ClientOptions o;
  o.base_url = URL;
  o.app_key = "k";
  o.app_secret = "s";
  o.app_id = APP_ID;
  o.root_public_key = ROOT_KEY;
  o.hardware_id = hwid.empty() ? "hw-cpp-" + std::to_string(++counter) : hwid;
  o.lease_store = std::make_shared<tollgate::MemoryLeaseStore>();
  o.not_before = 0;
  return o;
}

std::unique_ptr<tollgate::Client> client(tollgate::ClientOptions o) {
  auto c = std::make_unique<tollgate::Client>(std::move(o));
  c->auth = tollgate::SessionAuth{"stub-session"};
  return c;
}

template <typename F>
void until(F&& ok, std::chrono::milliseconds limit = 5000ms) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!ok()) {
    if (std::chrono::steady_clock::now() > end) throw check::Failure("timed out waiting");
    std::this_thread::sleep_for(20ms);
  }
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

template <typename E, typename F>
E thrown(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e;
  }
  throw check::Failure("expected an exception");
}

// ---- the schedule on a fake clock: the heartbeat's thread runs its schedule at once, up to `limit` waits.
struct FakeTime {
  std::atomic<std::int64_t> mono{0};
  std::vector<std::int64_t> waits;
  std::size_t limit;
  std::atomic<bool> held{false};
  std::atomic<bool> released{false};
  explicit FakeTime(std::size_t l) : limit(l) {}
  // Past `limit` waits, the wait holds until the test has stopped the heartbeat and set `released` (10 s at most),
  // so a slow machine cannot fit one more beat between `held` and stop().
  tollgate::detail::Heartbeat::Wait wait() {
    return [this](std::int64_t ms) {
      if (waits.size() >= limit) {
        held = true;
        for (int i = 0; i < 1000 && !released; ++i) std::this_thread::sleep_for(10ms);
        return;
      }
      waits.push_back(ms);
      mono += ms;
    };
  }
};

std::string iso(std::int64_t ms) {
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
  return buf;
}

tollgate::Seat seat_at(std::int64_t server, std::int64_t ttl, double hb = 300) {
  return tollgate::Seat{"seat-1", iso(0), iso(server + ttl), hb, 5, 1, iso(server)};
}

}  // namespace

int main() {
  const char* url = std::getenv("TOLLGATE_STUB_URL");
  if (!url) {
    std::cerr << "TOLLGATE_STUB_URL is not set: run this through `node sdk/test-vectors/stub-server.mjs --run`\n";
    return 1;
  }
  URL = url;
  APP_ID = std::getenv("TOLLGATE_STUB_APP_ID");
  ROOT_KEY = std::getenv("TOLLGATE_STUB_ROOT_KEY");
  curl_global_init(CURL_GLOBAL_DEFAULT);

  check::run("has() online: nothing before a verified answer, then the user of the last one", [] {
    reset_stub();
    configure({{"entitlements", {"pro", "export-pdf"}}});
    auto c = client(options());
    CHECK_EQ(c->has("pro"), false);
    c->get_app_context();
    CHECK_EQ(joined(c->entitlements()), "export-pdf,pro");
    CHECK_EQ(c->has("studio"), false);
    CHECK_EQ(c->is_trial(), false);
    c->get_app_context(std::nullopt);  // anonymous: no user, nothing held
    CHECK_EQ(c->entitlements().size(), 0u);
  });

  check::run("an unverified answer never grants", [] {
    reset_stub();
    auto o = options();
    o.root_public_key = std::string(43, 'A');
    auto c = client(o);
    thrown<tollgate::VerificationError>([&] { c->get_app_context(); });
    CHECK_EQ(c->has("pro"), false);
  });

  check::run("has() offline: from the verified lease, each code until its `until`; the lease's end ends them all", [] {
    reset_stub();
    std::atomic<std::int64_t> shift{0};
    auto o = options();
    o.clock.now = [&] { return now_ms() + shift.load(); };
    configure({{"lease_entitlements", {{{"code", "export-pdf"}, {"until", now_ms() + 60000}}, {{"code", "pro"}, {"until", nullptr}}}}});
    auto c = client(o);
    c->create_lease();
    const auto lease = c->check_lease();
    CHECK_EQ(lease.entitlements.size(), 2u);
    CHECK_EQ(joined(c->entitlements()), "export-pdf,pro");
    shift = 61000;
    CHECK_EQ(joined(c->entitlements()), "pro");
    shift = 8LL * 86400000;
    CHECK_EQ(c->entitlements().size(), 0u);
    thrown<tollgate::LeaseError>([&] { c->check_lease(); });
    shift = 0;
    CHECK_EQ(c->has("pro"), false);  // a failed lease check holds nothing
  });

  check::run("a trial user's lease says is_trial; an older lease (no fields) holds nothing", [] {
    reset_stub();
    configure({{"is_trial", true}});
    auto c = client(options());
    c->create_lease();
    c->check_lease();
    CHECK_EQ(c->has("pro"), true);
    CHECK_EQ(c->is_trial(), true);
    configure({{"is_trial", false}, {"old_lease", true}});
    auto old = client(options());
    old->create_lease();
    const auto lease = old->check_lease();
    CHECK_EQ(lease.entitlements.size(), 0u);
    CHECK_EQ(old->has("pro"), false);
    CHECK_EQ(old->is_trial(), false);
  });

  check::run("start_trial(): the session becomes auth, the user is a trial user; trial_used is a refusal", [] {
    reset_stub();
    auto c = client(options());
    c->auth.reset();
    const auto trial = c->start_trial(std::nullopt, std::string("alice@example.com"));
    CHECK_EQ(trial.user.membership.is_trial, true);
    CHECK_EQ(std::get<tollgate::SessionAuth>(*c->auth).session_token, "stub-trial-session");
    CHECK_EQ(c->is_trial(), true);
    configure({{"trial", "trial_used"}});
    const auto e = thrown<tollgate::ApiError>([&] { client(options())->start_trial(); });
    CHECK_EQ(e.status(), 403);
    CHECK_EQ(e.code(), "trial_used");
  });

  check::run("checkout_seat() heartbeats at a third of heartbeat_seconds", [] {
    reset_stub();
    configure({{"heartbeat_seconds", 1.5}});
    auto c = client(options("hw-cpp-beats"));
    const auto seat = c->checkout_seat();
    CHECK_EQ(seat.heartbeat_seconds, 1.5);
    CHECK_EQ(seat.in_use, 1);
    CHECK_EQ(c->seat_state() == tollgate::SeatState::held, true);
    until([] { return log_of("POST /seats/heartbeat", "hw-cpp-beats").size() >= 3; });
    const auto beats = log_of("POST /seats/heartbeat", "hw-cpp-beats");
    for (std::size_t i = 1; i < beats.size(); i++) {
      const auto gap = beats[i]["at"].get<std::int64_t>() - beats[i - 1]["at"].get<std::int64_t>();
      CHECK_EQ(gap >= 400 && gap < 1000, true);
    }
    CHECK_EQ(c->seat()->expires_at > seat.expires_at, true);
  });

  for (const std::string mode : {"seat_not_found", "conflict"}) {
    check::run("a " + mode + " heartbeat answer: the callback hears it and seat_state() says lost", [mode] {
      reset_stub();
      configure({{"heartbeat_seconds", 0.6}});
      std::atomic<int> heard{0};
      std::string reason;
      std::mutex m;
      auto o = options();
      o.on_seat_lost = [&](const tollgate::SeatLoss& l) {
        std::lock_guard<std::mutex> lock(m);
        reason = l.reason;
        heard++;
      };
      auto c = client(o);
      const auto seat = c->checkout_seat();
      configure({{"heartbeat", mode}});
      until([&] { return heard.load() > 0; });
      {
        std::lock_guard<std::mutex> lock(m);
        CHECK_EQ(reason, mode);
      }
      CHECK_EQ(c->seat_state() == tollgate::SeatState::lost, true);
      CHECK_EQ(c->seat_loss()->seat_id, seat.id);
      CHECK_EQ(tollgate::detail::lost_reason_of(c->seat_loss()->cause), mode);
      const auto n = log_of("POST /seats/heartbeat").size();
      std::this_thread::sleep_for(400ms);
      CHECK_EQ(log_of("POST /seats/heartbeat").size(), n);  // no more heartbeats for a lost seat
    });
  }

  check::run("failed heartbeats are retried, then the expiry loses the seat", [] {
    reset_stub();
    configure({{"heartbeat_seconds", 1.2}});
    std::atomic<int> heard{0};
    auto o = options("hw-cpp-expire");
    o.on_seat_lost = [&](const tollgate::SeatLoss&) { heard++; };
    auto c = client(o);
    c->checkout_seat();
    until([] { return !log_of("POST /seats/heartbeat", "hw-cpp-expire").empty(); });
    configure({{"heartbeat", "unavailable"}});
    const auto started = now_ms();
    until([&] { return heard.load() > 0; });
    CHECK_EQ(c->seat_loss()->reason, "expired");
    thrown<tollgate::UnavailableError>([&] { std::rethrow_exception(c->seat_loss()->cause); });
    std::size_t retried = 0;
    for (const auto& b : log_of("POST /seats/heartbeat", "hw-cpp-expire"))
      if (b["at"].get<std::int64_t>() >= started) retried++;
    CHECK_EQ(retried >= 2, true);
    CHECK_EQ(now_ms() - started < 2000, true);
  });

  check::run("seats_exhausted is a refusal whose body has in_use, max, next_free_at", [] {
    reset_stub();
    configure({{"checkout", "exhausted"}});
    auto c = client(options());
    const auto e = thrown<tollgate::ApiError>([&] { c->checkout_seat(); });
    CHECK_EQ(e.status(), 409);
    CHECK_EQ(e.code(), "seats_exhausted");
    const auto body = json::parse(e.body());
    CHECK_EQ(body["in_use"].get<int>(), 5);
    CHECK_EQ(body["next_free_at"].is_string(), true);
    CHECK_EQ(c->seat_state() == tollgate::SeatState::none, true);
  });

  check::run("release_seat() releases, stops the heartbeat and drops the stored lease", [] {
    reset_stub();
    configure({{"heartbeat_seconds", 0.6}});
    auto c = client(options("hw-cpp-release"));
    c->create_lease();
    c->checkout_seat();
    CHECK_EQ(c->release_seat().released, true);
    CHECK_EQ(c->seat_state() == tollgate::SeatState::none, true);
    CHECK_EQ(thrown<tollgate::LeaseError>([&] { c->check_lease(); }).verdict() == tollgate::LeaseVerdict::dropped, true);
    const auto n = log_of("POST /seats/heartbeat", "hw-cpp-release").size();
    std::this_thread::sleep_for(500ms);
    CHECK_EQ(log_of("POST /seats/heartbeat", "hw-cpp-release").size(), n);
    CHECK_EQ(c->release_seat().released, false);
  });

  check::run("release_seat() with no seat (released false, no held_until) drops the stored lease", [] {
    reset_stub();
    auto c = client(options("hw-cpp-no-seat"));
    c->create_lease();
    const auto answer = c->release_seat();
    CHECK_EQ(answer.released, false);
    CHECK_EQ(answer.held_until.has_value(), false);
    CHECK_EQ(thrown<tollgate::LeaseError>([&] { c->check_lease(); }).verdict() == tollgate::LeaseVerdict::dropped, true);
  });

  check::run("release_seat() of a seat an offline lease holds: released false with held_until, the lease kept", [] {
    reset_stub();
    configure({{"release", "held"}});
    auto c = client(options("hw-cpp-held"));
    const auto lease = c->create_lease();
    c->checkout_seat();
    const auto held = c->release_seat();
    CHECK_EQ(held.released, false);
    CHECK_EQ(held.held_until.has_value() && *held.held_until > held.server_time, true);
    CHECK_EQ(c->seat_state() == tollgate::SeatState::none, true);
    CHECK_EQ(c->check_lease().lease_id, lease.lease_id);  // the device may go on offline until held_until
    configure({{"release", "ok"}});
    CHECK_EQ(c->release_seat().held_until.has_value(), false);
    CHECK_EQ(thrown<tollgate::LeaseError>([&] { c->check_lease(); }).verdict() == tollgate::LeaseVerdict::dropped, true);
  });

  check::run("the destructor releases a held seat", [] {
    reset_stub();
    {
      auto c = client(options("hw-cpp-dtor"));
      c->checkout_seat();
      CHECK_EQ(stub("GET", "/_stub/state")["seats"].size(), 1u);
    }
    CHECK_EQ(log_of("DELETE /seats", "hw-cpp-dtor").size(), 1u);
    CHECK_EQ(stub("GET", "/_stub/state")["seats"].size(), 0u);  // released, with the checkout's credentials
  });

  check::run("the destructor's release of a seat a lease holds keeps the lease for the next run", [] {
    reset_stub();
    configure({{"release", "held"}});
    auto o = options("hw-cpp-dtor-held");
    std::string lease_id;
    {
      auto c = client(o);
      lease_id = c->create_lease().lease_id;
      c->checkout_seat();
    }
    CHECK_EQ(log_of("DELETE /seats", "hw-cpp-dtor-held").size(), 1u);
    auto next = client(o);  // the same lease store: the app's next start, offline
    CHECK_EQ(next->check_lease().lease_id, lease_id);
  });

  check::run("reset_devices(): the session used is ended; reset_cooldown and reset_disabled", [] {
    reset_stub();
    auto c = client(options());
    const auto r = c->reset_devices();
    CHECK_EQ(r.devices_removed, 1);
    CHECK_EQ(r.next_reset_at.has_value(), true);
    CHECK_EQ(c->auth.has_value(), false);
    configure({{"reset", "cooldown"}});
    const auto e = thrown<tollgate::ApiError>([&] { client(options())->reset_devices(); });
    CHECK_EQ(e.status(), 429);
    CHECK_EQ(e.code(), "reset_cooldown");
    CHECK_EQ(*e.retry_after(), 7 * 24 * 3600 - 3600);
    CHECK_EQ(e.last_reset_at().has_value(), true);
    configure({{"reset", "disabled"}});
    const auto off = thrown<tollgate::ApiError>([&] { client(options())->reset_devices(); });
    CHECK_EQ(off.code(), "reset_disabled");
    CHECK_EQ(off.retry_after().has_value(), false);
  });

  check::run("schedule: beats every third while beats succeed", [] {
    FakeTime t(4);
    std::vector<std::int64_t> at;
    std::atomic<bool> lost{false};
    tollgate::detail::Heartbeat hb(
        seat_at(0, 300000), 0,
        [&] {
          at.push_back(t.mono);
          return std::make_pair(seat_at(t.mono, 300000), t.mono.load());
        },
        [&] { return t.mono.load(); }, [&](const tollgate::SeatLoss&) { lost = true; }, t.wait());
    until([&] { return t.held.load(); });
    hb.stop();
    t.released = true;
    CHECK_EQ(json(at).dump(), "[100000,200000,300000,400000]");
    CHECK_EQ(lost.load(), false);
  });

  check::run("schedule: a failed beat is retried before the expiry", [] {
    FakeTime t(4);
    std::vector<std::int64_t> at;
    tollgate::detail::Heartbeat hb(
        seat_at(0, 300000), 0,
        [&] {
          at.push_back(t.mono);
          if (at.size() <= 2) throw tollgate::UnavailableError(503, false, std::nullopt, std::nullopt);
          return std::make_pair(seat_at(t.mono, 300000), t.mono.load());
        },
        [&] { return t.mono.load(); }, [](const tollgate::SeatLoss&) {}, t.wait());
    until([&] { return t.held.load(); });
    hb.stop();
    t.released = true;
    CHECK_EQ(at[0], 100000);
    CHECK_EQ(at[1] - at[0] < 100000, true);
    CHECK_EQ(at[2] < 300000, true);
    CHECK_EQ(at[3] - at[2], 100000);
  });

  check::run("schedule: no beat through before the expiry is lost at the expiry, never later", [] {
    FakeTime t(100);
    std::optional<tollgate::SeatLoss> lost;
    std::mutex m;
    tollgate::detail::Heartbeat hb(
        seat_at(0, 300000), 0, [&]() -> std::pair<tollgate::Seat, std::int64_t> { throw tollgate::NetworkError("down"); },
        [&] { return t.mono.load(); },
        [&](const tollgate::SeatLoss& l) {
          std::lock_guard<std::mutex> lock(m);
          lost = l;
        },
        t.wait());
    until([&] {
      std::lock_guard<std::mutex> lock(m);
      return lost.has_value();
    });
    CHECK_EQ(lost->reason, "expired");
    CHECK_EQ(t.mono.load(), 300000);
  });

  check::run("schedule: a short time to live beats at a third of it", [] {
    FakeTime t(2);
    tollgate::detail::Heartbeat hb(
        seat_at(0, 30000), 0, [&] { return std::make_pair(seat_at(t.mono, 300000), t.mono.load()); },
        [&] { return t.mono.load(); }, [](const tollgate::SeatLoss&) {}, t.wait());
    until([&] { return t.held.load(); });
    hb.stop();
    t.released = true;
    CHECK_EQ(json(t.waits).dump(), "[10000,100000]");
  });

  curl_global_cleanup();
  return check::summary("seats");
}
