// Tollgate quick start: copy this into your app.
//
// Online: redeem a license code (or log in with a username and password), then client.check_access():
// the membership, a variable, a file (resuming an interrupted download), and an offline lease kept for later.
// Offline (no answer from Tollgate: unreachable, unavailable, a captive portal's page): check_access() falls
// back to the lease by itself, until it runs out. A verified refusal (a ban) or a forged answer never does.
//
// Configuration (environment): TOLLGATE_URL, TOLLGATE_APP_ID, TOLLGATE_APP_KEY, TOLLGATE_APP_SECRET,
// TOLLGATE_ROOT_KEY (printed by `tollgate keys init`), and TOLLGATE_LICENSE_CODE or TOLLGATE_USERNAME +
// TOLLGATE_PASSWORD. Optional: TOLLGATE_FILE_ID (default: the app's first file), TOLLGATE_DOWNLOAD_DIR
// (default: the current folder), TOLLGATE_SEATS=1 when the app sells floating seats (one is held while working,
// kept alive by its heartbeat, then released), TOLLGATE_WORK_SECONDS (how long that work lasts; default 0).
// In a real app the app id, key, secret and root key are compiled in.
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>
#include <tollgate/tollgate.hpp>

static std::string env(const char* name, const std::string& fallback = "") {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

static std::string iso(std::int64_t ms) {
  std::time_t s = static_cast<std::time_t>(ms / 1000);
  char out[32];
  std::strftime(out, sizeof out, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&s));
  return out;
}

static void print_lease(const char* prefix, const tollgate::LeaseInfo& lease) {
  std::cout << prefix << "lease ok until " << iso(lease.expires_at) << " (runtime used " << lease.runtime_used_ms / 1000
            << " s of " << lease.runtime_budget_ms / 1000 << " s)" << (lease.renew_due ? "; renewal due" : "") << "\n";
}

/** A feature of the Pro tier: has() answers from the last verified answer (online) or the verified lease (offline). */
static void gated_feature(tollgate::Client& client) {
  if (client.has("pro"))
    std::cout << "pro: PDF export enabled\n";
  else
    std::cout << "pro: not in this license (PDF export disabled)\n";
  if (client.is_trial()) std::cout << "trial: this is a time-limited trial\n";
}

/**
 * A floating license: a seat is held while the app works, kept alive by the heartbeat thread, and given back at
 * the end (~Client() would too). A lost seat calls on_seat_lost and seat_state() says lost: stop the work then.
 */
static void with_a_seat(tollgate::Client& client, double seconds) {
  tollgate::Seat seat;
  try {
    seat = client.checkout_seat();
  } catch (const tollgate::RefusedError& e) {
    if (e.code() != "seats_exhausted" && e.code() != "seats_not_enabled") throw;
    const auto body = nlohmann::json::parse(e.body(), nullptr, false);
    std::cout << "no seat: " << e.code();
    if (e.code() == "seats_exhausted" && body.is_object())
      std::cout << " (" << body.value("in_use", 0) << "/" << body.value("max", 0) << " in use, next free at "
                << body.value("next_free_at", std::string("?")) << ")";
    std::cout << "\n";
    return;
  }
  std::cout << "seat " << seat.id << " checked out (" << seat.in_use << "/" << seat.max << " in use), heartbeat every "
            << seat.heartbeat_seconds / 3 << " s\n";
  std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<long>(seconds * 1000)));  // the work
  if (client.seat_state() == tollgate::SeatState::lost) {
    std::cout << "seat lost (" << client.seat_loss()->reason << "): stopping the work\n";
    return;
  }
  std::cout << "seat still held, expires at " << client.seat()->expires_at << "\n";
  // A seat an offline lease holds stays taken until the lease ends (held_until); the lease is then kept.
  const tollgate::SeatRelease released = client.release_seat();
  std::cout << "seat released: " << (released.released ? "true" : "false");
  if (released.held_until) std::cout << ", held by the offline lease until " << *released.held_until;
  std::cout << "\n";
}

/** What the online failure behind a lease fallback was, for the log. */
static std::string describe(const std::exception_ptr& cause) {
  if (!cause) return "none";
  try {
    std::rethrow_exception(cause);
  } catch (const std::exception& e) {
    return e.what();
  }
}

int main() {
  tollgate::ClientOptions options;
  options.base_url = env("TOLLGATE_URL");
  options.app_id = env("TOLLGATE_APP_ID");
  options.app_key = env("TOLLGATE_APP_KEY");
  options.app_secret = env("TOLLGATE_APP_SECRET");
  options.root_public_key = env("TOLLGATE_ROOT_KEY");
  if (options.base_url.empty() || options.app_id.empty() || options.root_public_key.empty()) {
    std::cerr << "set TOLLGATE_URL, TOLLGATE_APP_ID, TOLLGATE_APP_KEY, TOLLGATE_APP_SECRET and TOLLGATE_ROOT_KEY\n";
    return 1;
  }
  // Timeouts: connect 10 s and 30 s per call by default (options.connect_timeout_ms, options.timeout_ms).
  tollgate::Client client(options);  // hardware id: the OS machine id hashed with the app id; lease in app-data folders

  try {
    // 1. Log in: redeem a license code, or a username and password. Without the server check_access() below
    //    decides on the stored lease, so only "no answer" is caught here.
    try {
      const std::string code = env("TOLLGATE_LICENSE_CODE");
      if (!code.empty()) {
        try {
          client.sign_up_with_license_code({code, std::nullopt});
          std::cout << "redeemed the license code\n";
        } catch (const tollgate::RefusedError& e) {
          if (e.code() != "license_used") throw;
          std::cout << "the license code was redeemed before\n";
        }
        client.login({tollgate::CodeCredentials{code}, std::nullopt});
      } else {
        client.login({tollgate::PasswordCredentials{env("TOLLGATE_USERNAME"), env("TOLLGATE_PASSWORD")}, std::nullopt});
      }
      std::cout << "logged in\n";
    } catch (const tollgate::NetworkError& e) {
      std::cout << "server unreachable (" << e.reason() << ": " << e.what() << ")\n";
    } catch (const tollgate::UnavailableError& e) {
      std::cout << "server unavailable (" << e.status() << ")\n";
    }

    // 2. Online or on the lease: check_access() decides.
    tollgate::Access access = client.check_access();
    if (access.source == tollgate::Access::Source::lease) {
      std::cout << "working offline (" << describe(access.cause) << ")\n";
      print_lease("offline: ", *access.lease);
      gated_feature(client);  // from the verified lease now
      return 0;
    }

    // 3. Online: the membership and a variable (verified answer: an emulator cannot fake these).
    const tollgate::AppContext& ctx = *access.context;
    if (!ctx.user || !ctx.user->membership.is_active) {
      std::cout << "membership: inactive\n";
      return 2;
    }
    const auto& m = ctx.user->membership;
    std::cout << "membership: active " << (m.is_lifetime ? "for life" : "until " + m.active_until.value_or("?")) << " (user "
              << ctx.user->username << ")\n";
    std::cout << "variable latest_version = " << ctx.application.variable("latest_version").value_or("(not set)") << "\n";
    gated_feature(client);

    // 4. A file, resumed if an earlier download was interrupted, checked against the signed hash.
    std::string file_id = env("TOLLGATE_FILE_ID"), name = "download.bin";
    for (const auto& f : ctx.application.files)
      if (file_id.empty() || f.id == file_id) {
        file_id = f.id;
        name = f.name;
        break;
      }
    if (!file_id.empty()) {
      tollgate::DownloadResult r = client.download_file(file_id, env("TOLLGATE_DOWNLOAD_DIR", ".") + "/" + name);
      std::cout << "downloaded " << name << ": " << r.size << " bytes, sha256 " << r.sha256 << (r.resumed ? ", resumed" : "")
                << "\n";
    }

    // 5. check_access() keeps an offline lease for this device (and renews it when due).
    tollgate::LeaseInfo lease = client.check_lease();
    std::cout << "lease " << lease.seq << ": works offline until " << iso(lease.expires_at) << ", renew after "
              << iso(lease.renew_after) << "\n";
    // Later, without network: check_access() again (or check_lease() periodically) while offline.
    print_lease("offline: ", client.check_lease());

    // 6. A floating seat while working (apps that sell "N machines at once").
    if (env("TOLLGATE_SEATS") == "1") with_a_seat(client, std::atof(env("TOLLGATE_WORK_SECONDS", "0").c_str()));
    return 0;
  } catch (const tollgate::RefusedError& e) {
    // A verified refusal: it drops this user's lease; show the server's words and the operator's reason.
    std::cout << "refused by the server: " << e.status() << " " << e.code() << " (" << e.detail() << ")"
              << (e.ban_reason() ? " reason: " + *e.ban_reason() : "") << "\n";
    return 2;
  } catch (const tollgate::VerificationError& e) {
    // An emulator, a replay or a tampering proxy: never trusted, and no reason to run on the lease.
    std::cout << "answer refused (" << tollgate::to_string(e.verdict()) << ")\n";
    return 4;
  } catch (const tollgate::LeaseError& e) {
    std::cout << "offline: refused (" << tollgate::to_string(e.verdict()) << ", after: " << describe(e.cause())
              << "): ask the user to go online\n";
    return 3;
  }
}
