// Issue 24 against the REAL server (tests/harness.mjs starts it): entitlements granted by the operator and by a
// license template reach has() online and, from the lease the server signed, offline; a trial started from the
// client is a trial user holding the trial's entitlements, resumed on the same device, refused when trials are off.
#include "live.hpp"

int main() {
  live_init();

  check::run("an operator's grant and a template's license: has() online, then offline from the signed lease", [] {
    TestApp app = make_app(json{{"offline_grace_seconds", 86400}});
    const std::string user_id = active_user(app, "tiers-alice");
    json tpl = admin("POST", "/apps/" + app.id + "/templates", json{{"name", "Export"}, {"minutes", 60}, {"entitlements", {"export-pdf"}}}, 201);
    const std::string code =
        admin("POST", "/apps/" + app.id + "/licenses", json{{"count", 1}, {"template_id", tpl["id"]}}, 201)["licenses"][0]["code"];
    auto o = options(app);
    auto store = std::make_shared<tollgate::MemoryLeaseStore>();
    o.lease_store = store;
    o.hardware_id = "cpp-live-tiers";
    tollgate::Client c(o);
    c.activate_license({code, "tiers-alice", PASSWORD, std::nullopt});
    admin("POST", "/apps/" + app.id + "/users/" + user_id + "/entitlements", json{{"code", "pro"}}, 0);
    c.auth = tollgate::PasswordAuth{"tiers-alice", PASSWORD};
    CHECK_EQ(c.has("pro"), false);  // nothing verified yet
    CHECK_EQ(c.check_access().source == tollgate::Access::Source::online, true);
    CHECK_EQ(json(c.entitlements()).dump(), R"(["export-pdf","pro"])");
    CHECK_EQ(c.is_trial(), false);

    auto off = options(app, OFFLINE);
    off.lease_store = store;
    off.hardware_id = "cpp-live-tiers";
    tollgate::Client offline(off);
    offline.auth = c.auth;
    const auto access = offline.check_access();
    CHECK_EQ(access.source == tollgate::Access::Source::lease, true);
    CHECK_EQ(access.lease->entitlements.size(), 2u);
    CHECK_EQ(json(offline.entitlements()).dump(), R"(["export-pdf","pro"])");
  });

  check::run("a trial: the session is kept, the user is a trial user with the trial's entitlements; resumed; trials off", [] {
    TestApp app = make_app(json{{"offline_grace_seconds", 86400}});
    admin("PATCH", "/apps/" + app.id, json{{"trial_minutes", 60}, {"trial_entitlements", {"pro"}}}, 200);
    auto o = options(app);
    o.hardware_id = "cpp-live-trial-device";
    tollgate::Client c(o);
    const auto trial = c.start_trial(std::nullopt, std::string("someone@example.com"));
    CHECK_EQ(trial.user.membership.is_trial, true);
    CHECK_EQ(std::get<tollgate::SessionAuth>(*c.auth).session_token, trial.session_token);
    CHECK_EQ(c.is_trial(), true);
    CHECK_EQ(c.has("pro"), true);
    c.check_access();
    const auto lease = c.check_lease();
    CHECK_EQ(lease.is_trial, true);
    CHECK_EQ(c.has("pro"), true);
    tollgate::Client again(o);
    CHECK_EQ(again.start_trial().user.id, trial.user.id);
    admin("PATCH", "/apps/" + app.id, json{{"trial_minutes", 0}}, 200);
    auto other = options(app);
    other.hardware_id = "cpp-live-other-device";
    tollgate::Client refused(other);
    const auto e = api_error_of([&] { refused.start_trial(); });
    CHECK_EQ(e.has_value(), true);
    CHECK_EQ(e->code(), "trials_disabled");
  });

  return check::summary("live tiers");
}
