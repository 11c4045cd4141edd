// The shared failure script of issue 27 (sdk/test-vectors/scenarios.json), run against the real server and the
// harness's proxy with the outcomes every SDK must reach; and the rest of the error model: timeouts, check_access
// going online and renewing the lease, a LeaseError's times and cause.
//   node harness.mjs <repo root> scenarios_test <repo root>/sdk/test-vectors/scenarios.json
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>

#include "live.hpp"

namespace {

/** A socket on 127.0.0.1 (port 0: any); listening: it accepts TCP (the kernel's backlog) and never answers. */
struct Socket {
  int fd = -1;
  int port = 0;
  explicit Socket(bool listening) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t n = sizeof a;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), n) != 0 || (listening && ::listen(fd, 64) != 0) ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n) != 0)
      throw std::runtime_error("socket on 127.0.0.1 failed");
    port = ntohs(a.sin_port);
  }
  ~Socket() { close(); }
  void close() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }
};

/** The error model's name of what a call threw ("none" when it returned), with the fields the scenarios check. */
struct Outcome {
  std::string error = "none";
  json fields = json::object();
};

template <typename F>
Outcome outcome_of(F&& call) {
  Outcome o;
  try {
    call();
  } catch (const tollgate::NetworkError& e) {
    o.error = "NetworkError";
    o.fields["network_reason"] = e.reason();
  } catch (const tollgate::UnavailableError& e) {
    o.error = "ServiceUnavailable";
    o.fields["unavailable_verified"] = e.verified();
    o.fields["status"] = e.status();
    o.fields["retry_after"] = e.retry_after() ? json(*e.retry_after()) : json(nullptr);
  } catch (const tollgate::VerificationError& e) {
    o.error = "VerificationError";
    o.fields["verdict"] = tollgate::to_string(e.verdict());
  } catch (const tollgate::RefusedError& e) {
    o.error = "Refused";
    o.fields["refused"] = json{{"status", e.status()}, {"code", e.code()},
                               {"ban_reason", e.ban_reason() ? json(*e.ban_reason()) : json(nullptr)}};
    o.fields["code"] = e.code();
  } catch (const tollgate::LeaseError& e) {
    o.error = "LeaseError";
    o.fields["lease_verdict"] = tollgate::to_string(e.verdict());
  }
  return o;
}

std::int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char** argv) {
  live_init();
  if (argc < 2) throw std::runtime_error("usage: scenarios_test <scenarios.json>");
  const json script = json::parse(read_text(argv[1]));

  TestApp app = make_app(json{{"offline_grace_seconds", 86400}});
  auto scenario_options = [&](const std::string& base, std::shared_ptr<tollgate::LeaseStore> store) {
    auto o = options(app, base);
    o.lease_store = std::move(store);
    o.connect_timeout_ms = 1000;  // the script's timeouts: the tarpit ends quickly
    o.timeout_ms = 1500;
    return o;
  };
  /** A fresh client on `base` whose store holds a valid lease for a fresh active user, made through the real server. */
  auto fresh_client = [&](const std::string& name, const std::string& base, bool through_proxy) {
    const std::string username = "alice-" + name;
    const std::string user_id = active_user(app, username);
    mitm("pass", app.id);
    auto store = std::make_shared<tollgate::MemoryLeaseStore>();
    auto setup = std::make_unique<tollgate::Client>(scenario_options(through_proxy ? MITM : URL, store));
    setup->login({tollgate::PasswordCredentials{username, PASSWORD}, std::nullopt});
    setup->create_lease();
    if (through_proxy) return std::make_pair(std::move(setup), user_id);
    auto client = std::make_unique<tollgate::Client>(scenario_options(base, store));
    client->auth = setup->auth;
    return std::make_pair(std::move(client), user_id);
  };

  std::cout << "the shared failure script (sdk/test-vectors/scenarios.json)\n";
  for (const json& sc : script.at("scenarios")) {
    const std::string name = sc.at("name");
    check::run(name + ": " + sc.at("server").get<std::string>().substr(0, 60) + "...", [&] {
      Socket released(false), tarpit(true);
      released.close();  // a port taken and released: nothing listens there
      std::string base = MITM, mode = "pass";
      bool proxy = true;
      if (name == "server_down") base = released.url(), proxy = false;
      else if (name == "tarpit") base = tarpit.url(), proxy = false;
      else if (name == "unsigned_503") mode = "unsigned_503";
      else if (name == "unsigned_page") mode = "unsigned_page";
      else if (name == "forged_answer") mode = "flip_byte";
      else if (name != "verified_ban") throw check::Failure("no setup for the scenario " + name + " in this test");
      auto prepared = fresh_client(name, base, proxy);
      auto& client = prepared.first;
      const std::string user_id = prepared.second;
      if (name == "verified_ban")
        admin("POST", "/apps/" + app.id + "/bans", json{{"type", "user"}, {"value", user_id}, {"reason", "chargeback"}}, 0);
      mitm(mode, app.id);

      const std::int64_t started = steady_ms();
      const Outcome online = outcome_of([&] { client->get_app_context(); });
      const std::int64_t elapsed = steady_ms() - started;
      CHECK_EQ(online.error, sc.at("online_error").get<std::string>());
      for (const char* field : {"network_reason", "unavailable_verified", "verdict"})
        if (sc.contains(field)) CHECK_EQ(online.fields.value(field, json()).dump(), sc[field].dump());
      if (sc.contains("refused"))
        for (const auto& [k, v] : sc["refused"].items()) CHECK_EQ(online.fields["refused"][k].dump(), v.dump());
      if (sc.contains("max_elapsed_ms")) CHECK(elapsed <= sc["max_elapsed_ms"].get<std::int64_t>());
      if (name == "unsigned_503") CHECK_EQ(online.fields["retry_after"].dump(), "2");

      const json& want = sc.at("check_access");
      std::optional<tollgate::Access> access;
      const Outcome checked = outcome_of([&] { access = client->check_access(); });
      if (want.contains("source")) {
        CHECK_EQ(checked.error, "none");
        CHECK(access && access->source == tollgate::Access::Source::lease && access->lease);
        CHECK_EQ(access->lease->user_id, user_id);
        CHECK_EQ(std::string(want.at("lease_verdict")), "ok");
        // The online failure that led to the lease is kept as the cause.
        CHECK_EQ(outcome_of([&] { std::rethrow_exception(access->cause); }).error, sc.at("online_error").get<std::string>());
      } else {
        CHECK_EQ(checked.error, want.at("error").get<std::string>());
        for (const char* field : {"code", "verdict"})
          if (want.contains(field)) CHECK_EQ(checked.fields.value(field, json()).dump(), want[field].dump());
      }
      if (sc.contains("lease_after")) {
        const Outcome after = outcome_of([&] { client->check_lease(); });
        CHECK_EQ(after.error == "none" ? std::string("ok") : after.fields.value("lease_verdict", after.error),
                 sc["lease_after"].get<std::string>());
      }
      mitm("pass", app.id);
    });
  }

  std::cout << "the rest of the error model\n";
  check::run("timeouts default to connect 10 s and 30 s per call", [&] {
    tollgate::ClientOptions defaults;
    CHECK_EQ(defaults.connect_timeout_ms, 10000L);
    CHECK_EQ(defaults.timeout_ms, 30000L);
  });
  check::run("check_access online: the verified context, and a lease kept when none was stored", [&] {
    active_user(app, "online-user");
    auto store = std::make_shared<tollgate::MemoryLeaseStore>();
    tollgate::Client c(scenario_options(URL, store));
    c.login({tollgate::PasswordCredentials{"online-user", PASSWORD}, std::nullopt});
    const tollgate::Access a = c.check_access();
    CHECK(a.source == tollgate::Access::Source::online && a.context && a.context->user);
    CHECK(!a.cause);
    CHECK(store->lease.has_value());
    CHECK_EQ(c.check_lease().user_id, a.context->user->id);
    const std::string first = *store->lease;
    c.check_access();  // not due: the same lease is kept
    CHECK(*store->lease == first);
  });
  check::run("check_access on an expired lease: LeaseError expired with its times and the online failure as cause", [&] {
    std::int64_t shift = 0;
    auto store = std::make_shared<tollgate::MemoryLeaseStore>();
    auto o = scenario_options(URL, store);
    o.clock.now = [&] { return wall_ms() + shift; };
    tollgate::Client online(o);
    active_user(app, "expiring");
    online.login({tollgate::PasswordCredentials{"expiring", PASSWORD}, std::nullopt});
    const tollgate::LeaseInfo lease = online.create_lease();
    Socket released(false);
    released.close();
    auto off = scenario_options(released.url(), store);
    off.clock.now = o.clock.now;
    tollgate::Client offline(off);
    shift = lease.expires_at - wall_ms() + 60000;
    try {
      offline.check_access();
      CHECK(false);
    } catch (const tollgate::LeaseError& e) {
      CHECK_EQ(std::string(tollgate::to_string(e.verdict())), "expired");
      CHECK_EQ(e.expires_at().value_or(0), lease.expires_at);
      CHECK(e.last_seen_time() && *e.last_seen_time() >= lease.issued_at);
      CHECK(e.runtime_left() && *e.runtime_left() == 86400LL * 1000);
      CHECK_EQ(outcome_of([&] { std::rethrow_exception(e.cause()); }).fields["network_reason"].get<std::string>(), "connection");
    }
  });

  return check::summary("the shared scenarios and the error model");
}
