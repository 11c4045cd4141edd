// What the tests against the REAL server share (tests/harness.mjs starts it with a man-in-the-middle proxy in
// front): the admin API, the real CLI, the proxy's mode, apps, users, clients and a device with its own folders.
#pragma once
#include <curl/curl.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <tollgate/tollgate.hpp>

#include "check.hpp"

using json = nlohmann::json;
namespace fs = std::filesystem;
using tollgate::AnswerVerdict;
using tollgate::LeaseVerdict;

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) throw std::runtime_error(std::string(name) + " is not set: run this test through tests/harness.mjs");
  return v;
}

const std::string PASSWORD = "correct horse battery";
std::string URL, MITM, TOKEN, NODE, CLI, DIR;

size_t collect(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

struct Http {
  long status = 0;
  std::string body;
  json parsed() const { return body.empty() ? json() : json::parse(body); }
};

Http http(const std::string& method, const std::string& url, const std::string& body, const std::string& content_type,
          bool admin = true) {
  CURL* c = curl_easy_init();
  Http out;
  curl_slist* h = nullptr;
  if (admin) h = curl_slist_append(h, ("authorization: Bearer " + TOKEN).c_str());
  if (!content_type.empty()) h = curl_slist_append(h, ("content-type: " + content_type).c_str());
  h = curl_slist_append(h, "Expect:");
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
  if (!body.empty() || method == "POST" || method == "PUT") {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &out.body);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
  CURLcode rc = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out.status);
  curl_slist_free_all(h);
  curl_easy_cleanup(c);
  if (rc != CURLE_OK) throw std::runtime_error(std::string("http: ") + curl_easy_strerror(rc));
  return out;
}

json admin(const std::string& method, const std::string& path, const json& body, long expect) {
  Http r = http(method, URL + "/admin/v1" + path, body.is_null() ? "" : body.dump(), body.is_null() ? "" : "application/json");
  if (expect ? r.status != expect : (r.status < 200 || r.status > 299))
    throw std::runtime_error(method + " " + path + ": " + std::to_string(r.status) + " " + r.body);
  return r.parsed();
}

/** The real CLI, --json output parsed. */
json cli(const std::string& args) {
  const std::string cmd = "'" + NODE + "' '" + CLI + "' --json --url " + URL + " --token " + TOKEN + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("popen failed");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int rc = pclose(p);
  if (rc != 0) throw std::runtime_error("tollgate " + args + ": " + out);
  return out.empty() ? json() : json::parse(out);
}

/** Sets the proxy's mode (harness.mjs); `only`: a path prefix the mode applies to (the rest pass). */
json mitm(const std::string& mode, const std::string& app_id = "", const json& swap = json::object(), const json& key = nullptr,
          const std::string& only = "") {
  return http("POST", MITM + "/__mitm",
              json{{"mode", mode}, {"app_id", app_id}, {"swap", swap}, {"key", key}, {"only", only}}.dump(),
              "application/json", false)
      .parsed();
}
json mitm_log() { return http("GET", MITM + "/__mitm", "", "", false).parsed(); }

struct TestApp {
  std::string id, api_key, api_secret, root_public_key, root_key_file, kid;
};

int apps = 0;
TestApp make_app(const json& settings = json::object()) {
  json body = settings;
  body["name"] = "C++ SDK app " + std::to_string(++apps);
  json created = admin("POST", "/apps", body, 201);
  TestApp app{created["id"], created["api_key"], created["api_secret"], "", DIR + "/root-" + created["id"].get<std::string>() + ".pem", ""};
  json init = cli("keys init --app " + app.id + " --out '" + app.root_key_file + "'");
  app.root_public_key = init["root_public_key"];
  app.kid = init["signing_key"]["kid"];
  return app;
}

tollgate::ClientOptions options(const TestApp& app, const std::string& base = URL) {
  tollgate::ClientOptions o;
  o.base_url = base;
  o.app_key = app.api_key;
  o.app_secret = app.api_secret;
  o.app_id = app.id;
  o.root_public_key = app.root_public_key;
  o.hardware_id = "test-machine-1";
  o.lease_store = std::make_shared<tollgate::MemoryLeaseStore>();
  return o;
}

std::string license(const TestApp& app, int minutes = 60) {
  return admin("POST", "/apps/" + app.id + "/licenses", json{{"count", 1}, {"minutes", minutes}}, 201)["licenses"][0]["code"];
}

/** A user with an active membership (sign-up, then a license); returns the user id. */
std::string active_user(const TestApp& app, const std::string& username, int minutes = 60) {
  tollgate::Client c(options(app));
  auto user = c.sign_up({username, PASSWORD, std::nullopt});
  c.activate_license({license(app, minutes), username, PASSWORD, std::nullopt});
  return user.id;
}

/** The verdict of a call that must be refused as unverified, or what happened instead. */
template <typename F>
std::string verdict_of(F&& call) {
  try {
    call();
    return "accepted";
  } catch (const tollgate::VerificationError& e) {
    return tollgate::to_string(e.verdict());
  } catch (const std::exception& e) {
    return std::string("other: ") + e.what();
  }
}

/** The verdict and the (unverified) status of a call refused as unverified. */
template <typename F>
std::string refusal_of(F&& call) {
  try {
    call();
    return "accepted";
  } catch (const tollgate::VerificationError& e) {
    return std::string(tollgate::to_string(e.verdict())) + " " + std::to_string(e.unverified_status().value_or(0));
  } catch (const std::exception& e) {
    return std::string("other: ") + e.what();
  }
}

template <typename F>
std::string lease_verdict_of(F&& call) {
  try {
    call();
    return "ok";
  } catch (const tollgate::LeaseError& e) {
    return tollgate::to_string(e.verdict());
  } catch (const std::exception& e) {
    return std::string("other: ") + e.what();
  }
}

template <typename F>
std::optional<tollgate::ApiError> api_error_of(F&& call) {
  try {
    call();
  } catch (const tollgate::ApiError& e) {
    return e;
  }
  return std::nullopt;
}

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}
void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

/** The app as a user runs it: clocks the test moves, files in app-data folders under a temp dir. */
struct Device {
  std::int64_t shift = 0;
  std::int64_t mono = 0;
  tollgate::Folders folders;
  std::string hardware_id;
  Device(const std::string& name, std::string hw = "machine-A") : hardware_id(std::move(hw)) {
    const fs::path base = fs::path(DIR) / ("device-" + name);
    folders = {(base / "data").string(), (base / "state").string()};
  }
  std::unique_ptr<tollgate::Client> client(const TestApp& app, const std::string& base = URL) {
    auto o = options(app, base);
    o.hardware_id = hardware_id;
    o.lease_store = std::make_shared<tollgate::FileLeaseStore>(folders);
    o.clock.now = [this] { return wall_ms() + shift; };
    o.clock.monotonic = [this] { return mono; };
    o.timeout_ms = 5000;
    return std::make_unique<tollgate::Client>(o);
  }
};

const std::string OFFLINE = "http://127.0.0.1:9";  // a closed port: no server at all

}  // namespace

namespace {
/** Reads the harness's environment; call first in main(). */
inline void live_init() {
  URL = env("TOLLGATE_TEST_URL");
  MITM = env("TOLLGATE_TEST_MITM");
  TOKEN = env("TOLLGATE_TEST_ADMIN_TOKEN");
  NODE = env("TOLLGATE_TEST_NODE");
  CLI = env("TOLLGATE_TEST_CLI");
  DIR = env("TOLLGATE_TEST_DIR");
  curl_global_init(CURL_GLOBAL_DEFAULT);
}
}  // namespace
