// The C++ SDK against the REAL server, started by tests/harness.mjs (node dist/cli/main.js serve on a
// temporary SQLite database) with a man-in-the-middle proxy in front of it. Apps and keys are made as an
// operator does: the admin API and the real CLI (tollgate keys init / rotate / retire).
#include "live.hpp"

int main() {
  live_init();

  const int GRACE_S = 3600;
  TestApp app = make_app(json{{"offline_grace_seconds", GRACE_S}, {"lease_renew_seconds", 600}});
  admin("PUT", "/apps/" + app.id + "/variables/latest_version", json{{"value", "2.4.1"}}, 0);
  std::string file_bytes;
  for (int i = 0; i < 5000; i++) file_bytes += "line " + std::to_string(i) + " of the game data\n";
  Http uploaded = http("POST", URL + "/admin/v1/apps/" + app.id + "/files?name=game.pak&mime_type=application/octet-stream",
                       file_bytes, "application/octet-stream");
  if (uploaded.status != 201) throw std::runtime_error("upload: " + uploaded.body);
  const std::string file_id = uploaded.parsed()["id"];
  const std::string file_sha = tollgate::sha256_hex(file_bytes);

  std::cout << "typed calls\n";
  check::run("sign up, activate a license, log in, read the context and a variable, log out", [&] {
    tollgate::Client sut(options(app));
    auto user = sut.sign_up({"alice", PASSWORD, std::nullopt});
    CHECK_EQ(user.username, "alice");
    CHECK(!user.membership.is_active);
    auto activation = sut.activate_license({license(app), "alice", PASSWORD, std::nullopt});
    CHECK_EQ(activation.minutes.value_or(-1), 60);
    auto session = sut.login({tollgate::PasswordCredentials{"alice", PASSWORD}, std::nullopt});
    CHECK(sut.auth && std::get<tollgate::SessionAuth>(*sut.auth).session_token == session.session_token);
    auto ctx = sut.get_app_context();
    CHECK(ctx.user && ctx.user->membership.is_active);
    CHECK_EQ(ctx.application.variable("latest_version").value_or(""), "2.4.1");
    sut.logout();
    CHECK(!sut.auth);
    auto err = api_error_of([&] { sut.get_app_context(tollgate::SessionAuth{session.session_token}); });
    CHECK(err.has_value());
    CHECK_EQ(err->status(), 401);
  });

  check::run("redeem(): the user redeems a code before any membership, then by session; a used code is 401", [&] {
    tollgate::Client sut(options(app));
    sut.sign_up({"redeemer", PASSWORD, std::nullopt});
    sut.auth = tollgate::PasswordAuth{"redeemer", PASSWORD};  // no membership yet, so no login: redeeming needs none
    const std::string code = license(app);
    auto answer = sut.redeem(code);
    CHECK_EQ(answer.activation.minutes.value_or(-1), 60);
    CHECK_EQ(answer.activation.type, "license");
    CHECK_EQ(answer.user.username, "redeemer");
    CHECK(answer.user.membership.is_active);
    CHECK_EQ(sut.get_app_context().user->id, answer.user.id);
    sut.login({tollgate::PasswordCredentials{"redeemer", PASSWORD}, std::nullopt});
    auto err = api_error_of([&] { sut.redeem(code); });
    CHECK(err.has_value());
    CHECK_EQ(err->status(), 401);
    CHECK_EQ(err->code(), "license_used");
  });

  check::run("redeems a license code alone and uses it as the credential", [&] {
    tollgate::Client sut(options(app));
    const std::string code = license(app);
    auto user = sut.sign_up_with_license_code({code, std::nullopt});
    CHECK(user.membership.is_active);
    auto ctx = sut.get_app_context(tollgate::LicenseCodeAuth{code});
    CHECK_EQ(ctx.user->id, user.id);
  });

  check::run("a verified error is an ApiError with its status, stable code and field errors", [&] {
    tollgate::Client sut(options(app));
    auto err = api_error_of([&] { sut.login({tollgate::PasswordCredentials{"nobody", "wrong password"}, std::nullopt}); });
    CHECK(err.has_value());
    CHECK_EQ(err->status(), 401);
    CHECK_EQ(err->code(), "invalid_credentials");
    auto invalid = api_error_of([&] { sut.sign_up({"x", PASSWORD, std::nullopt}); });
    CHECK(invalid.has_value());
    CHECK_EQ(invalid->code(), "validation_error");
    CHECK(!invalid->field_errors().empty() && invalid->field_errors()[0].field.rfind("body.username", 0) == 0);
  });

  check::run("an unsigned answer (wrong app secret: the app is not known) is missing_signature", [&] {
    auto o = options(app);
    o.app_secret = "not-the-secret";
    tollgate::Client sut(o);
    try {
      sut.get_app_context(tollgate::LicenseCodeAuth{"X"});
      CHECK(false);
    } catch (const tollgate::VerificationError& e) {
      CHECK_EQ(std::string(tollgate::to_string(e.verdict())), "missing_signature");
      CHECK_EQ(e.unverified_status().value_or(0), 401);
    }
  });

  check::run("a fresh nonce on every call; the key list names the current kid", [&] {
    mitm("pass", app.id);
    tollgate::Client sut(options(app, MITM));
    auto keys = sut.get_signing_keys();
    bool found = false;
    for (const auto& k : keys.keys) found |= k.kid == app.kid;
    CHECK(found);
    for (int i = 0; i < 2; i++) {
      try {
        sut.get_app_context(std::nullopt);
      } catch (const tollgate::ApiError&) {
      }
    }
    auto nonces = mitm_log()["nonces"].get<std::vector<std::string>>();
    CHECK(nonces.size() >= 3);
    CHECK_EQ(std::set<std::string>(nonces.begin(), nonces.end()).size(), nonces.size());
    for (const auto& n : nonces) CHECK(n.size() >= 16 && n.size() <= 64);
  });

  std::cout << "an emulator or a tampering proxy is refused\n";
  tollgate::Client logged_in(options(app));
  active_user(app, "eve");
  logged_in.login({tollgate::PasswordCredentials{"eve", PASSWORD}, std::nullopt});
  auto through = [&](const std::string& mode) {
    mitm(mode, app.id);
    auto c = std::make_unique<tollgate::Client>(options(app, MITM));
    c->auth = logged_in.auth;
    return c;
  };
  check::run("an emulator with its own root and key, signing correctly over the request: bad_certificate", [&] {
    auto c = through("emulator_root");
    CHECK_EQ(verdict_of([&] { c->get_app_context(); }), "bad_certificate");
  });
  check::run("the real certificate with the emulator's own key: bad_signature", [&] {
    auto c = through("emulator_key");
    CHECK_EQ(verdict_of([&] { c->get_app_context(); }), "bad_signature");
  });
  check::run("a real answer with its body changed (a banned user made active): bad_signature", [&] {
    const std::string banned = active_user(app, "mallory");
    admin("POST", "/apps/" + app.id + "/bans", json{{"type", "user"}, {"value", banned}}, 0);
    auto c = through("body_changed");
    CHECK_EQ(verdict_of([&] { c->get_app_context(tollgate::PasswordAuth{"mallory", PASSWORD}); }), "bad_signature");
  });
  check::run("a replayed answer (the right key, an old nonce): bad_signature", [&] {
    auto c = through("replay");
    CHECK_EQ(verdict_of([&] { c->get_app_context(); }), "accepted");  // recorded: it answers this request
    CHECK_EQ(verdict_of([&] { c->get_app_context(); }), "bad_signature");
  });
  check::run("an answer to another request (same nonce, another target): bad_signature", [&] {
    auto c = through("other_target");
    CHECK_EQ(verdict_of([&] { c->get_app_context(); }), "bad_signature");
  });
  check::run("the signature header stripped by a proxy: missing_signature", [&] {
    auto c = through("strip");
    CHECK_EQ(verdict_of([&] { c->get_app_context(); }), "missing_signature");
  });
  mitm("pass");

  std::cout << "credentials are in the signed bytes: a proxy swapping in a paying user's is refused\n";
  {
    const std::string payer_code = license(app);
    tollgate::Client payer(options(app));
    payer.sign_up_with_license_code({payer_code, std::nullopt});  // the paying user, known by the code alone
    active_user(app, "payer");
    payer.login({tollgate::PasswordCredentials{"payer", PASSWORD}, std::nullopt});
    const std::string payer_bearer = "Bearer " + std::get<tollgate::SessionAuth>(*payer.auth).session_token;
    tollgate::Client signup(options(app));
    signup.sign_up({"freeloader", PASSWORD, std::nullopt});  // no license: membership inactive
    // The free user cannot log in (membership inactive): its "session" is one the server does not know.
    const tollgate::UserAuth free_session = tollgate::SessionAuth{"tg_sess_free_user_0123456789abcdef"};
    const json paying_user = {{"x-api-username", "payer"}, {"x-api-password", PASSWORD}};
    auto swapped = [&](const json& swap, const std::optional<tollgate::UserAuth>& auth, const std::string& folder) {
      mitm("swap", app.id, swap);
      auto o = options(app, MITM);
      o.lease_store = std::make_shared<tollgate::FileLeaseStore>(
          tollgate::Folders{DIR + "/swap-" + folder + "/data", DIR + "/swap-" + folder + "/state"});
      auto c = std::make_unique<tollgate::Client>(o);
      c->auth = auth;
      return c;
    };
    check::run("the free user's own answers verify through the proxy (the swap changes nothing yet)", [&] {
      auto c = swapped(json::object(), tollgate::PasswordAuth{"freeloader", PASSWORD}, "none");
      auto err = api_error_of([&] { c->get_app_context(); });  // verified refusals, not verification errors
      CHECK(err && err->code() == "membership_inactive");
      err = api_error_of([&] { c->create_lease(); });
      CHECK(err && err->code() == "membership_inactive");
    });
    check::run("x-api-username/x-api-password swapped: app_context and lease refused (bad_signature), no lease kept", [&] {
      auto c = swapped(paying_user, tollgate::PasswordAuth{"freeloader", PASSWORD}, "user");
      CHECK_EQ(refusal_of([&] { c->get_app_context(); }), "bad_signature 200");  // the server answered the payer
      CHECK_EQ(refusal_of([&] { c->create_lease(); }), "bad_signature 200");
      CHECK_EQ(lease_verdict_of([&] { c->check_lease(); }), "no_lease");
    });
    check::run("the Bearer session swapped: app_context and lease refused (bad_signature)", [&] {
      auto c = swapped(json{{"authorization", payer_bearer}}, free_session, "bearer");
      CHECK_EQ(refusal_of([&] { c->get_app_context(); }), "bad_signature 200");
      CHECK_EQ(refusal_of([&] { c->create_lease(); }), "bad_signature 200");
      CHECK_EQ(lease_verdict_of([&] { c->check_lease(); }), "no_lease");
    });
    check::run("the license code swapped: app_context and lease refused (bad_signature)", [&] {
      auto c = swapped(json{{"x-api-license-code", payer_code}}, tollgate::LicenseCodeAuth{"FREE-NOT-A-CODE"}, "code");
      CHECK_EQ(refusal_of([&] { c->get_app_context(); }), "bad_signature 200");
      CHECK_EQ(refusal_of([&] { c->create_lease(); }), "bad_signature 200");
      CHECK_EQ(lease_verdict_of([&] { c->check_lease(); }), "no_lease");
    });
    check::run("the hardware id swapped on /lease: refused (bad_signature)", [&] {
      auto c = swapped(json{{"x-hardware-id", "the-paying-users-machine"}}, payer.auth, "hwid");
      // The server refuses the payer's session from another machine (401), signed over the swapped hardware id. (The
      // key-list fetch this fresh client makes first is swapped too; a failed one no longer fails the call: 21.3.)
      CHECK_EQ(refusal_of([&] { c->create_lease(); }), "bad_signature 401");
    });
    mitm("pass");
  }

  std::cout << "downloads\n";
  const fs::path dl = fs::path(DIR) / "downloads";
  fs::create_directories(dl);
  check::run("downloads a whole file, verified against the signed hash", [&] {
    active_user(app, "dl-whole");
    tollgate::Client sut(options(app));
    sut.login({tollgate::PasswordCredentials{"dl-whole", PASSWORD}, std::nullopt});
    const std::string dest = (dl / "whole.pak").string();
    auto r = sut.download_file(file_id, dest);
    CHECK(read_text(dest) == file_bytes);
    CHECK_EQ(r.size, file_bytes.size());
    CHECK_EQ(r.sha256, file_sha);
    CHECK(!r.resumed);
    CHECK(!fs::exists(dest + ".part"));
  });
  check::run("resumes an interrupted download with Range and If-Range, and checks the assembled file", [&] {
    active_user(app, "dl-resume");
    tollgate::Client sut(options(app));
    sut.login({tollgate::PasswordCredentials{"dl-resume", PASSWORD}, std::nullopt});
    const std::string dest = (dl / "resumed.pak").string();
    write_text(dest + ".part", file_bytes.substr(0, 1234));
    write_text(dest + ".part.json", json{{"etag", "\"" + file_sha + "\""}}.dump());
    mitm("pass", app.id);
    tollgate::Client via(options(app, MITM));
    auto r = via.download_file(file_id, dest, sut.auth);
    CHECK_EQ(mitm_log()["ranges"].dump(), "[\"bytes=1234-\"]");
    CHECK(r.resumed);
    CHECK_EQ(r.sha256, file_sha);
    CHECK(read_text(dest) == file_bytes);
  });
  check::run("refuses a resumed file whose earlier bytes were wrong, and keeps nothing", [&] {
    active_user(app, "dl-bad");
    tollgate::Client sut(options(app));
    sut.login({tollgate::PasswordCredentials{"dl-bad", PASSWORD}, std::nullopt});
    const std::string dest = (dl / "bad.pak").string();
    write_text(dest + ".part", std::string(1000, 'A'));
    write_text(dest + ".part.json", json{{"etag", "\"" + file_sha + "\""}}.dump());
    CHECK_EQ(verdict_of([&] { sut.download_file(file_id, dest); }), "bad_signature");
    CHECK(!fs::exists(dest));
    CHECK(!fs::exists(dest + ".part"));
  });

  std::cout << "signing keys\n";
  check::run("rotation (tollgate keys rotate) needs no client update: the new kid verifies under the same root", [&] {
    TestApp other = make_app();
    mitm("pass", other.id);
    tollgate::Client c(options(other, MITM));
    try {
      c.get_app_context(std::nullopt);
    } catch (const tollgate::ApiError&) {
    }
    json rotated = cli("keys rotate --app " + other.id + " --root-key '" + other.root_key_file + "'");
    CHECK(rotated["kid"] != other.kid);
    mitm("pass", other.id);
    // The same client object, the same pinned root: the answer now comes from the new key.
    CHECK_EQ(verdict_of([&] {
               try {
                 c.get_app_context(std::nullopt);
               } catch (const tollgate::ApiError&) {
               }
             }),
             "accepted");
    // The unknown kid made it fetch the key list before it accepted the answer.
    CHECK_EQ(mitm_log()["paths"].dump(), "[\"/app_context\",\"/signing_keys\"]");
    auto keys = c.get_signing_keys();
    std::set<std::string> kids;
    for (const auto& k : keys.keys) kids.insert(k.kid);
    CHECK(kids.count(other.kid) && kids.count(rotated["kid"].get<std::string>()));
  });
  check::run("a retired key (tollgate keys retire) is refused once learned: a replay of its answer is key_retired", [&] {
    TestApp other = make_app();
    mitm("capture", other.id);
    {
      tollgate::Client c(options(other, MITM));
      try {
        c.get_app_context(std::nullopt);  // a 401, signed all the same by the first key: captured
      } catch (const tollgate::ApiError&) {
      }
    }
    cli("keys rotate --app " + other.id + " --root-key '" + other.root_key_file + "'");
    cli("keys retire --app " + other.id + " " + other.kid);
    mitm("replay_captured", other.id);
    tollgate::Client fresh(options(other, MITM));
    CHECK_EQ(verdict_of([&] { fresh.get_app_context(std::nullopt); }), "key_retired");
  });

  std::cout << "key freshness (a server of our own: the client pins the emulator's root)\n";
  {
    const std::string emu_root = mitm("pass")["emulator_root_public_key"];
    const std::int64_t DAY = 24LL * 3600 * 1000, MIN = 60000;
    auto pinned_to_emulator = [&](std::optional<std::int64_t> not_before = std::nullopt) {
      auto o = options(app, MITM);
      o.root_public_key = emu_root;
      o.not_before = not_before;
      return std::make_unique<tollgate::Client>(o);
    };
    auto keyed = [&](const std::string& seed, std::int64_t not_before, std::int64_t not_after, std::int64_t t_shift = 0) {
      mitm("emulator_keyed", app.id, json::object(),
           json{{"seed", seed}, {"kid", seed}, {"not_before", not_before}, {"not_after", not_after}, {"t_shift_ms", t_shift}});
    };
    check::run("a fresh install refuses a key that ended before the SDK's release, signing a back-dated t (key_expired)", [&] {
      const std::int64_t end = tollgate::SDK_RELEASED_AT - DAY;
      keyed("ended", end - 30 * DAY, end, end - 3600000 - wall_ms());
      CHECK_EQ(verdict_of([&] { pinned_to_emulator()->get_app_context(std::nullopt); }), "key_expired");
      // An app built earlier may lower the floor (not_before): the same answer is then accepted.
      CHECK_EQ(verdict_of([&] { pinned_to_emulator(end - 40 * DAY)->get_app_context(std::nullopt); }), "accepted");
    });
    check::run("an older key is key_retired 10 minutes after a newer key was first verified, accepted before", [&] {
      const std::int64_t now = wall_ms();
      auto c = pinned_to_emulator();
      keyed("older", now - 2 * DAY, now + 30 * DAY);
      CHECK_EQ(verdict_of([&] { c->get_app_context(std::nullopt); }), "accepted");
      keyed("newer", now - DAY, now + 30 * DAY);
      CHECK_EQ(verdict_of([&] { c->get_app_context(std::nullopt); }), "accepted");
      keyed("older", now - 2 * DAY, now + 30 * DAY);
      CHECK_EQ(verdict_of([&] { c->get_app_context(std::nullopt); }), "accepted");  // within the 10 minutes
      auto late = pinned_to_emulator();
      keyed("newer", now - DAY, now + 30 * DAY, -11 * MIN);  // the newer key first seen 11 minutes ago
      CHECK_EQ(verdict_of([&] { late->get_app_context(std::nullopt); }), "accepted");
      keyed("older", now - 2 * DAY, now + 30 * DAY);
      CHECK_EQ(verdict_of([&] { late->get_app_context(std::nullopt); }), "key_retired");
    });
    mitm("pass");
  }

  std::cout << "offline leases\n";
  int users = 0;
  struct Leased {
    std::unique_ptr<tollgate::Client> online, offline;
    tollgate::LeaseInfo lease;
    std::string user_id;
  };
  auto leased = [&](Device& device) {
    const std::string username = "lease-user" + std::to_string(++users);
    Leased l;
    l.user_id = active_user(app, username, 7 * 24 * 60);
    l.online = device.client(app);
    l.online->login({tollgate::PasswordCredentials{username, PASSWORD}, device.hardware_id});
    l.lease = l.online->create_lease();
    l.offline = device.client(app, OFFLINE);
    return l;
  };
  check::run("a lease works offline, with no network at all", [&] {
    Device device("works");
    auto l = leased(device);
    CHECK_EQ(l.lease.user_id, l.user_id);
    CHECK(!l.lease.renew_due);
    CHECK_EQ(l.lease.runtime_budget_ms, GRACE_S * 1000LL);
    bool unreachable = false;
    try {
      l.offline->get_app_context(std::nullopt);
    } catch (const tollgate::NetworkError&) {
      unreachable = true;
    }
    CHECK(unreachable);
    auto info = l.offline->check_lease();
    CHECK_EQ(info.user_id, l.user_id);
    CHECK_EQ(info.seq, l.lease.seq);
    CHECK_EQ(info.expires_at - info.issued_at, GRACE_S * 1000LL);
  });
  check::run("stops at exp (the offline grace), and asks for renewal past renew_after", [&] {
    Device device("exp");
    auto l = leased(device);
    device.shift = 601000;
    CHECK(l.offline->check_lease().renew_due);
    device.shift = l.lease.expires_at - wall_ms() - 1000;
    CHECK_EQ(lease_verdict_of([&] { l.offline->check_lease(); }), "ok");
    device.shift = l.lease.expires_at - wall_ms() + 1000;
    CHECK_EQ(lease_verdict_of([&] { l.offline->check_lease(); }), "expired");
  });
  check::run("stops after the clock is set back more than 5 minutes (a few minutes of drift are tolerated)", [&] {
    Device device("rollback");
    auto l = leased(device);
    device.shift = 30 * 60000;
    CHECK_EQ(lease_verdict_of([&] { l.offline->check_lease(); }), "ok");
    device.shift = 27 * 60000;
    CHECK_EQ(lease_verdict_of([&] { l.offline->check_lease(); }), "ok");
    device.shift = 0;
    CHECK_EQ(lease_verdict_of([&] { l.offline->check_lease(); }), "clock_rollback");
    auto restarted = device.client(app, OFFLINE);  // a restart does not forget it: the state is on disk
    CHECK_EQ(lease_verdict_of([&] { restarted->check_lease(); }), "clock_rollback");
  });
  check::run("stops when the offline runtime budget (monotonic clock) is spent, across restarts", [&] {
    Device device("runtime");
    auto l = leased(device);
    l.offline->check_lease();
    device.mono += GRACE_S * 1000LL - 60000;
    CHECK_EQ(l.offline->check_lease().runtime_used_ms, GRACE_S * 1000LL - 60000);
    auto restarted = device.client(app, OFFLINE);
    device.mono = 10;  // a new process: its monotonic clock starts again
    restarted->check_lease();
    device.mono += 60000;
    CHECK_EQ(lease_verdict_of([&] { restarted->check_lease(); }), "runtime_exhausted");
  });
  check::run("is refused on another machine (the files copied over)", [&] {
    Device device("hw", "machine-A");
    leased(device);
    Device copy("hw", "machine-B");  // the same folders, another hardware id
    auto c = copy.client(app, OFFLINE);
    CHECK_EQ(lease_verdict_of([&] { c->check_lease(); }), "hardware_mismatch");
  });
  check::run("an older lease put back after a newer one is superseded", [&] {
    Device device("superseded");
    auto l = leased(device);
    const fs::path lease_file = fs::path(device.folders.data) / "lease.tollgate";
    const std::string old = read_text(lease_file);
    l.online->create_lease();
    write_text(lease_file, old);
    CHECK_EQ(lease_verdict_of([&] { l.online->check_lease(); }), "superseded");
  });
  check::run("is dropped after a ban seen online", [&] {
    Device device("ban");
    auto l = leased(device);
    admin("POST", "/apps/" + app.id + "/bans", json{{"type", "user"}, {"value", l.user_id}}, 0);
    auto err = api_error_of([&] { l.online->get_app_context(); });
    CHECK(err.has_value());
    CHECK_EQ(err->code(), "banned");
    CHECK_EQ(lease_verdict_of([&] { l.offline->check_lease(); }), "dropped");
    auto restarted = device.client(app, OFFLINE);
    CHECK_EQ(lease_verdict_of([&] { restarted->check_lease(); }), "dropped");
  });
  check::run("tampered state is a rollback: a copy edited, one or both deleted while the lease is kept (issue 21.1)", [&] {
    Device device("tamper");
    leased(device);
    const fs::path a = fs::path(device.folders.data) / "state.json", b = fs::path(device.folders.state) / "state.json";
    const std::string original = read_text(a);
    fs::remove(b);
    CHECK_EQ(lease_verdict_of([&] { device.client(app, OFFLINE)->check_lease(); }), "clock_rollback");
    write_text(b, original);  // both copies back together: what a client cannot tell from no change at all
    CHECK_EQ(lease_verdict_of([&] { device.client(app, OFFLINE)->check_lease(); }), "ok");
    fs::remove(b);
    json record = json::parse(read_text(a));
    json state = json::parse(record["state"].get<std::string>());
    state["runtime_used_ms"] = 0;
    state["highest_trusted_time"] = 0;
    record["state"] = state.dump();
    write_text(a, record.dump());
    CHECK_EQ(lease_verdict_of([&] { device.client(app, OFFLINE)->check_lease(); }), "clock_rollback");
    write_text(a, original);
    std::string edited = original;
    auto at = edited.find("\\\"dropped\\\":false");
    CHECK(at != std::string::npos);
    edited.replace(at, 17, "\\\"dropped\\\":true");
    write_text(b, edited);
    CHECK_EQ(lease_verdict_of([&] { device.client(app, OFFLINE)->check_lease(); }), "clock_rollback");
    fs::remove(a);
    fs::remove(b);
    CHECK_EQ(lease_verdict_of([&] { device.client(app, OFFLINE)->check_lease(); }), "clock_rollback");
  });
  check::run("two clients sharing the state folders (two threads): no spurious clock_rollback; a drop by one holds", [&] {
    Device device("shared");
    auto l = leased(device);
    auto other = device.client(app);  // a second instance of the app: the same folders, its own memory
    other->auth = l.online->auth;
    std::vector<std::string> seen_a, seen_b;
    std::thread a([&] {
      for (int i = 0; i < 40; i++) {
        seen_a.push_back(lease_verdict_of([&] { l.offline->check_lease(); }));
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    });
    std::thread b([&] {
      for (int i = 0; i < 8; i++) {
        seen_b.push_back(lease_verdict_of([&] {
          other->get_app_context();
          if (i % 2 == 0) other->create_lease();
          other->check_lease();
        }));
      }
    });
    a.join();
    b.join();
    CHECK_EQ(json(std::set<std::string>(seen_a.begin(), seen_a.end())).dump(), "[\"ok\"]");
    CHECK_EQ(json(std::set<std::string>(seen_b.begin(), seen_b.end())).dump(), "[\"ok\"]");
    const fs::path copy1 = fs::path(device.folders.data) / "state.json", copy2 = fs::path(device.folders.state) / "state.json";
    CHECK(read_text(copy1) == read_text(copy2));
    CHECK(!fs::exists(fs::path(device.folders.data) / "state.lock"));
    // A ban seen online by the second instance: the first, still running on its memory, is dropped too and its
    // later writes (runtime) do not undo the drop.
    admin("POST", "/apps/" + app.id + "/bans", json{{"type", "user"}, {"value", l.user_id}}, 0);
    auto err = api_error_of([&] { other->get_app_context(); });
    CHECK(err && err->code() == "banned");
    CHECK_EQ(lease_verdict_of([&] { l.offline->check_lease(); }), "dropped");
    device.mono += 1000;
    CHECK_EQ(lease_verdict_of([&] { l.offline->check_lease(); }), "dropped");
    CHECK_EQ(lease_verdict_of([&] { device.client(app, OFFLINE)->check_lease(); }), "dropped");
  });
  check::run("the default hardware id goes on every call that takes one: sign-up, login on a device-auth app, context, lease", [&] {
    TestApp dev = make_app(json{{"device_auth_enabled", true}, {"offline_grace_seconds", 3600}});
    mitm("pass", dev.id);
    auto o = options(dev, MITM);
    o.hardware_id.reset();  // the default: hardware_id(app_id) from the OS machine id
    tollgate::Client c(o);
    const std::string hw = tollgate::hardware_id(dev.id);
    CHECK_EQ(c.device_id(), hw);
    c.sign_up({"device-user", PASSWORD, std::nullopt});
    c.activate_license({license(dev), "device-user", PASSWORD, std::nullopt});
    c.login({tollgate::PasswordCredentials{"device-user", PASSWORD}, std::nullopt});  // device_required without one
    CHECK(c.get_app_context().user->membership.is_active);
    c.create_lease();
    std::vector<std::string> expected = {"/sign_up header=- body=" + hw, "/activate_license header=- body=" + hw,
                                         "/auth/login header=- body=" + hw, "/app_context header=" + hw + " body=-",
                                         "/lease header=" + hw + " body=-"};
    std::vector<std::string> seen;
    const json log = mitm_log();
    for (const auto& line : log["hardware_ids"]) {
      const std::string text = line.get<std::string>();
      if (text.rfind("/signing_keys", 0) != 0) seen.push_back(text);
    }
    CHECK_EQ(json(seen).dump(), json(expected).dump());
    mitm("pass");
  });
  check::run("no lease yet is no_lease; an app without leases answers 403 leases_disabled", [&] {
    Device device("none");
    CHECK_EQ(lease_verdict_of([&] { device.client(app)->check_lease(); }), "no_lease");
    TestApp no_leases = make_app();
    active_user(no_leases, "nolease");
    tollgate::Client c(options(no_leases));
    c.login({tollgate::PasswordCredentials{"nolease", PASSWORD}, std::nullopt});
    auto err = api_error_of([&] { c.create_lease(); });
    CHECK(err.has_value());
    CHECK_EQ(err->status(), 403);
    CHECK_EQ(err->code(), "leases_disabled");
  });

  return check::summary("against the real server");
}
