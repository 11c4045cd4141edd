// Issue 25 against the REAL server (tests/harness.mjs starts it): floating seats checked out, kept alive by the
// heartbeat thread, exhausted, lost when the operator releases one (the next heartbeat is 404 seat_not_found),
// kept taken by the lease that holds it (the device keeping its lease), released by ~Client(); device self-reset
// and its cooldown.
#include <atomic>
#include <mutex>

#include "live.hpp"

namespace {
TestApp seat_app(const json& settings) {
  TestApp app = make_app(json{{"offline_grace_seconds", 86400}, {"max_devices_per_user", 100}});
  admin("PATCH", "/apps/" + app.id, settings, 200);
  return app;
}

tollgate::ClientOptions device(const TestApp& app, const std::string& hardware_id) {
  auto o = options(app);
  o.hardware_id = hardware_id;
  return o;
}
}  // namespace

int main() {
  live_init();

  check::run("seats: heartbeating, exhausted, lost when the operator releases one, kept by the lease that holds it", [] {
    TestApp app = seat_app(json{{"max_seats", 2}, {"heartbeat_seconds", 10}});
    active_user(app, "alice");
    std::mutex m;
    std::optional<tollgate::SeatLoss> lost;
    auto ao = device(app, "cpp-live-seat-a");
    ao.on_seat_lost = [&](const tollgate::SeatLoss& l) {
      std::lock_guard<std::mutex> lock(m);
      lost = l;
    };
    tollgate::Client a(ao);
    a.auth = tollgate::PasswordAuth{"alice", PASSWORD};
    const auto seat = a.checkout_seat();
    CHECK_EQ(seat.max, 2);
    CHECK_EQ(seat.in_use, 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(3900));  // a beat every 10/3 s moves the expiry on
    CHECK_EQ(a.seat()->expires_at > seat.expires_at, true);

    tollgate::Client b(device(app, "cpp-live-seat-b"));
    b.auth = tollgate::PasswordAuth{"alice", PASSWORD};
    b.create_lease();   // the lease holds b's seat
    b.checkout_seat();  // the same seat
    tollgate::Client c(device(app, "cpp-live-seat-c"));
    c.auth = tollgate::PasswordAuth{"alice", PASSWORD};
    const auto full = api_error_of([&] { c.checkout_seat(); });
    CHECK_EQ(full.has_value(), true);
    CHECK_EQ(full->code(), "seats_exhausted");
    CHECK_EQ(json::parse(full->body())["in_use"].get<int>(), 2);

    std::string a_seat;
    const json listed = admin("GET", "/apps/" + app.id + "/seats", nullptr, 200);
    for (const auto& s : listed["items"])
      if (s["hardware_id"] == "cpp-live-seat-a") a_seat = s["id"];
    if (a_seat.empty()) throw check::Failure("a's seat is not listed: " + listed.dump());
    admin("DELETE", "/apps/" + app.id + "/seats/" + a_seat, nullptr, 204);
    for (int i = 0; i < 100; i++) {
      {
        std::lock_guard<std::mutex> lock(m);
        if (lost) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    {
      std::lock_guard<std::mutex> lock(m);
      CHECK_EQ(lost.has_value(), true);
      CHECK_EQ(lost->reason, "seat_not_found");
      CHECK_EQ(lost->seat_id, seat.id);
    }
    CHECK_EQ(a.seat_state() == tollgate::SeatState::lost, true);

    // The lease holds b's seat until its exp whatever the device says (a copy may run on offline): released false
    // with held_until, and b keeps its lease, so it may go on offline until then; the operator frees the seat.
    const std::string b_lease = b.check_lease().lease_id;
    const auto held = b.release_seat();
    CHECK_EQ(held.released, false);
    CHECK_EQ(held.held_until.has_value() && *held.held_until > held.server_time, true);
    CHECK_EQ(lease_verdict_of([&] { b.check_lease(); }), "ok");
    CHECK_EQ(b.check_lease().lease_id, b_lease);
    {
      tollgate::Client d(device(app, "cpp-live-seat-c"));
      d.auth = tollgate::PasswordAuth{"alice", PASSWORD};
      d.checkout_seat();  // a's place
      tollgate::Client e(device(app, "cpp-live-seat-e"));
      e.auth = tollgate::PasswordAuth{"alice", PASSWORD};
      const auto still_full = api_error_of([&] { e.checkout_seat(); });
      CHECK_EQ(still_full.has_value() && still_full->code() == "seats_exhausted", true);
      std::string b_seat;
      const json seats = admin("GET", "/apps/" + app.id + "/seats", nullptr, 200);
      for (const auto& s : seats["items"])
        if (s["hardware_id"] == "cpp-live-seat-b") b_seat = s["id"];
      if (b_seat.empty()) throw check::Failure("b's seat is not listed: " + seats.dump());
      admin("DELETE", "/apps/" + app.id + "/seats/" + b_seat, nullptr, 204);
      e.checkout_seat();  // the operator freed b's seat
    }  // ~Client() releases both
    CHECK_EQ(admin("GET", "/apps/" + app.id + "/seats", nullptr, 200)["items"].size(), 0u);
  });

  check::run("device self-reset: the session used ends; reset_cooldown with retry_after; reset_disabled", [] {
    TestApp app = seat_app(json{{"device_reset_cooldown_seconds", 3600}});
    active_user(app, "alice");
    tollgate::Client c(device(app, "cpp-live-reset-1"));
    c.login({tollgate::PasswordCredentials{"alice", PASSWORD}, std::nullopt});
    const auto reset = c.reset_devices();
    CHECK_EQ(c.auth.has_value(), false);
    const auto again = api_error_of([&] { c.reset_devices(tollgate::PasswordAuth{"alice", PASSWORD}); });
    CHECK_EQ(again.has_value(), true);
    CHECK_EQ(again->status(), 429);
    CHECK_EQ(again->code(), "reset_cooldown");
    CHECK_EQ(*again->retry_after() > 3500, true);
    CHECK_EQ(*again->last_reset_at(), reset.reset_at);
    TestApp off = seat_app(json{{"device_reset_cooldown_seconds", 0}});
    active_user(off, "alice");
    tollgate::Client d(device(off, "cpp-live-reset-2"));
    d.auth = tollgate::PasswordAuth{"alice", PASSWORD};
    const auto disabled = api_error_of([&] { d.reset_devices(); });
    CHECK_EQ(disabled->code(), "reset_disabled");
  });

  return check::summary("live seats");
}
