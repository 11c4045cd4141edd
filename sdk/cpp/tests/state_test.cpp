// Issue 21 items 1-3 against the real server (tests/harness.mjs): a partial restore of the state files, a refusal
// about another user on the same machine, and a key list that cannot be fetched or verified after a rotation.
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
  auto leased = [&](Device& device) {
    const std::string username = "state-user" + std::to_string(++users);
    Leased l{device.client(app), active_user(app, username, 7 * 24 * 60)};
    l.online->login({tollgate::PasswordCredentials{username, PASSWORD}, device.hardware_id});
    l.online->create_lease();
    return l;
  };
  auto offline_verdict = [&](Device& device) {
    return lease_verdict_of([&] { device.client(app, OFFLINE)->check_lease(); });
  };
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

  std::cout << "21.2: a refusal drops only the lease of the user whose credentials the request carried\n";
  check::run("user B (inactive) refused on the same machine keeps user A's lease; user A refused drops it", [&] {
    Device device("other-user");
    auto a = leased(device);
    tollgate::Client(options(app)).sign_up({"inactive-b", PASSWORD, std::nullopt});  // no license: inactive
    auto b = device.client(app);
    b->auth = tollgate::PasswordAuth{"inactive-b", PASSWORD};
    auto err = api_error_of([&] { b->get_app_context(); });
    CHECK(err && err->code() == "membership_inactive");
    CHECK_EQ(lease_verdict_of([&] { b->check_lease(); }), "ok");
    CHECK_EQ(offline_verdict(device), "ok");
    deactivate(a.user_id);
    err = api_error_of([&] { a.online->get_app_context(); });
    CHECK(err && err->code() == "membership_inactive");
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
