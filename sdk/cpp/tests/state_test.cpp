// Issue 21 items 1-3 against the real server (tests/harness.mjs): a partial restore of the state files, which
// refusals drop the lease (its user's, by the signed user_id, or this machine's; not another user's), and a key list
// that cannot be fetched or verified after a rotation.
#include "live.hpp"

int main() {
  live_init();
  const std::int64_t HOUR = 3600LL * 1000;
  TestApp app = make_app(json{{"offline_grace_seconds", 86400}});
  struct Leased {
    std::unique_ptr<tollgate::Client> online;
    std::string user_id;
  };
  int users = 0;
  auto leased_in = [&](const TestApp& in, Device& device) {
    const std::string username = "state-user" + std::to_string(++users);
    Leased l{device.client(in), active_user(in, username, 7 * 24 * 60)};
    l.online->login({tollgate::PasswordCredentials{username, PASSWORD}, device.hardware_id});
    l.online->create_lease();
    return l;
  };
  auto leased = [&](Device& device) { return leased_in(app, device); };
  auto offline_verdict_in = [&](const TestApp& in, Device& device) {
    return lease_verdict_of([&] { device.client(in, OFFLINE)->check_lease(); });
  };
  auto offline_verdict = [&](Device& device) { return offline_verdict_in(app, device); };
  auto copies = [](const Device& device) {
    return std::make_pair(fs::path(device.folders.data) / "state.json", fs::path(device.folders.state) / "state.json");
  };
  auto deactivate = [&](const std::string& user_id) {
    admin("PATCH", "/apps/" + app.id + "/users/" + user_id, json{{"active_until", nullptr}}, 200);
  };

  std::cout << "21.1: one state copy restored from a backup and the other deleted\n";
  check::run("after a clock rollback: clock_rollback, not ok", [&] {
    Device device("restore-rollback");
    leased(device);
    const auto [copy1, copy2] = copies(device);
    const std::string backup = read_text(copy1);
    device.shift = 20 * HOUR;
    CHECK_EQ(offline_verdict(device), "ok");
    device.shift = 0;
    CHECK_EQ(offline_verdict(device), "clock_rollback");
    write_text(copy1, backup);
    fs::remove(copy2);
    CHECK_EQ(offline_verdict(device), "clock_rollback");
  });
  check::run("after a verified membership_inactive: the dropped lease does not come back", [&] {
    Device device("restore-drop");
    auto l = leased(device);
    const auto [copy1, copy2] = copies(device);
    const std::string backup = read_text(copy1);
    deactivate(l.user_id);
    auto err = api_error_of([&] { l.online->get_app_context(); });
    CHECK(err && err->code() == "membership_inactive");
    CHECK_EQ(offline_verdict(device), "dropped");
    write_text(copy1, backup);
    fs::remove(copy2);
    CHECK(offline_verdict(device) != "ok");
    CHECK_EQ(offline_verdict(device), "clock_rollback");
  });
  check::run("a new lease writes both copies again", [&] {
    Device device("restore-new-lease");
    auto l = leased(device);
    fs::remove(copies(device).second);
    CHECK_EQ(offline_verdict(device), "clock_rollback");
    l.online->create_lease();
    CHECK(fs::exists(copies(device).second));
    CHECK_EQ(offline_verdict(device), "ok");
  });

  std::cout << "21.2: a verified refusal drops the lease only when it is about the lease's user (its signed user_id)"
               " or this machine\n";
  auto ban = [&](const TestApp& in, const std::string& type, const std::string& value) {
    return admin("POST", "/apps/" + in.id + "/bans", json{{"type", type}, {"value", value}}, 201)["id"].get<std::string>();
  };
  check::run("a fresh process (no credentials seen answered yet): user A banned, A's refusal drops A's lease", [&] {
    Device device("fresh-ban");
    auto a = leased(device);
    ban(app, "user", a.user_id);
    auto restarted = device.client(app);  // the app started again with the session it kept: nothing in memory
    restarted->auth = a.online->auth;
    auto err = api_error_of([&] { restarted->get_app_context(); });
    CHECK(err && err->code() == "banned");
    CHECK(err && err->user_id() == a.user_id);
    CHECK_EQ(offline_verdict(device), "dropped");
  });
  check::run("user B (inactive) refused with membership_inactive on the same store keeps user A's lease; A's drops it", [&] {
    Device device("other-user");
    auto a = leased(device);
    const std::string b_id = tollgate::Client(options(app)).sign_up({"inactive-b", PASSWORD, std::nullopt}).id;  // no license
    auto b = device.client(app);
    b->auth = tollgate::PasswordAuth{"inactive-b", PASSWORD};
    auto err = api_error_of([&] { b->get_app_context(); });
    CHECK(err && err->code() == "membership_inactive");
    CHECK(err && err->user_id() == b_id);
    CHECK_EQ(lease_verdict_of([&] { b->check_lease(); }), "ok");
    CHECK_EQ(offline_verdict(device), "ok");
    deactivate(a.user_id);
    auto restarted = device.client(app);
    restarted->auth = a.online->auth;
    err = api_error_of([&] { restarted->get_app_context(); });
    CHECK(err && err->code() == "membership_inactive");
    CHECK(err && err->user_id() == a.user_id);
    CHECK_EQ(offline_verdict(device), "dropped");
  });
  check::run("an IP ban (this machine: no user_id) drops the lease, whoever's credentials were refused", [&] {
    TestApp ip_app = make_app(json{{"offline_grace_seconds", 86400}});  // its own app: the ban hits every request
    Device device("ip-ban");
    auto a = leased_in(ip_app, device);
    active_user(ip_app, "ip-banned-b");
    const std::string ban_id = ban(ip_app, "ip", "127.0.0.1");
    auto b = device.client(ip_app);
    b->auth = tollgate::PasswordAuth{"ip-banned-b", PASSWORD};
    auto err = api_error_of([&] { b->get_app_context(); });
    admin("DELETE", "/apps/" + ip_app.id + "/bans/" + ban_id, nullptr, 204);
    CHECK(err && err->code() == "banned");
    CHECK(err && !err->user_id());
    CHECK_EQ(offline_verdict_in(ip_app, device), "dropped");
  });
  check::run("a wrong password of user B (invalid_credentials, credentials never seen answered) keeps A's lease", [&] {
    Device device("wrong-password");
    auto a = leased(device);
    active_user(app, "wrong-password-b");
    a.online->auth = tollgate::PasswordAuth{"wrong-password-b", "not the password"};
    auto err = api_error_of([&] { a.online->get_app_context(); });
    CHECK(err && err->code() == "invalid_credentials");
    CHECK(err && !err->user_id());
    CHECK_EQ(offline_verdict(device), "ok");
  });
  check::run("invalid_credentials for credentials this process saw answered for A (A deleted) drops A's lease", [&] {
    Device device("deleted-user");
    const std::string id = active_user(app, "deleted-a", 7 * 24 * 60);
    auto c = device.client(app);
    c->auth = tollgate::PasswordAuth{"deleted-a", PASSWORD};
    c->create_lease();
    admin("DELETE", "/apps/" + app.id + "/users/" + id, nullptr, 0);
    auto err = api_error_of([&] { c->get_app_context(); });
    CHECK(err && err->code() == "invalid_credentials");
    CHECK(err && !err->user_id());
    CHECK_EQ(offline_verdict(device), "dropped");
  });

  std::cout << "21.3: a key list that cannot be fetched or verified does not fail a validly signed answer\n";
  for (const std::string mode : {"unsigned_503", "unsigned_page"}) {
    check::run("after a rotation, /signing_keys answering " + mode + ": the call succeeds, the fetch is retried a minute later", [&] {
      TestApp rotated = make_app();
      std::int64_t mono = 0;
      auto o = options(rotated, MITM);
      o.clock.monotonic = [&] { return mono; };
      tollgate::Client c(o);
      mitm("pass", rotated.id);
      CHECK_EQ(api_error_of([&] { c.get_app_context(std::nullopt); }).value().status(), 401);  // signed: the first key learned
      cli("keys rotate --app " + rotated.id + " --root-key '" + rotated.root_key_file + "'");
      mitm(mode, rotated.id, json::object(), nullptr, "/signing_keys");
      auto err = api_error_of([&] { c.get_app_context(std::nullopt); });  // signed by the new, unknown key
      CHECK_EQ(err.value().status(), 401);
      CHECK_EQ(mitm_log()["paths"].dump(), "[\"/app_context\",\"/signing_keys\"]");
      api_error_of([&] { c.get_app_context(std::nullopt); });
      CHECK_EQ(mitm_log()["paths"].dump(), "[\"/app_context\",\"/signing_keys\",\"/app_context\"]");  // not before a minute
      mono += 61000;
      mitm("pass", rotated.id);
      api_error_of([&] { c.get_app_context(std::nullopt); });
      CHECK_EQ(mitm_log()["paths"].dump(), "[\"/app_context\",\"/signing_keys\"]");  // retried, now verified
      CHECK_EQ(api_error_of([&] { c.get_app_context(std::nullopt); }).value().status(), 401);
      CHECK_EQ(mitm_log()["paths"].dump(), "[\"/app_context\",\"/signing_keys\",\"/app_context\"]");  // known now
    });
  }
  mitm("pass");

  return check::summary("issue 21: the offline state and the key list");
}
