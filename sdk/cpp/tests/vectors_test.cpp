// Every shared vector of sdk/test-vectors passes the SDK's verifier, plus the pieces that need no
// server: app-data folders, the hardware id, the MAC'd state in two places, the file store.
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <tollgate/tollgate.hpp>

#include "check.hpp"

using json = nlohmann::json;
namespace fs = std::filesystem;

static json load(const fs::path& dir, const char* name) {
  std::ifstream in(dir / name);
  if (!in) throw std::runtime_error("cannot read " + (dir / name).string());
  return json::parse(in);
}

static tollgate::Bytes b64(const std::string& text) {
  tollgate::Bytes out(text.size() + 3);
  size_t len = 0;
  if (sodium_base642bin(out.data(), out.size(), text.data(), text.size(), nullptr, &len, nullptr, sodium_base64_VARIANT_ORIGINAL) != 0)
    throw std::runtime_error("bad base64 in a vector");
  out.resize(len);
  return out;
}

static std::optional<std::string> header(const json& headers, const char* name) {
  if (!headers.contains(name)) return std::nullopt;
  return headers[name].get<std::string>();
}

static std::set<std::string> strings(const json& a) {
  std::set<std::string> out;
  for (const auto& x : a) out.insert(x.get<std::string>());
  return out;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: tollgate_tests <sdk/test-vectors folder>\n";
    return 2;
  }
  if (sodium_init() < 0) return 2;
  const fs::path dir = argv[1];
  std::set<std::string> answer_verdicts, lease_verdicts;

  std::cout << "certificates.json\n";
  const json certs = load(dir, "certificates.json");
  for (const auto& c : certs["cases"]) {
    check::run("certificate " + c["name"].get<std::string>(), [&] {
      const tollgate::Pinned pinned{certs["app_id"], certs["root_public_key"]};
      CHECK_EQ(std::string(tollgate::to_string(tollgate::check_certificate(c["certificate"], pinned, c["at"].get<std::int64_t>()))),
               c["expect"].get<std::string>());
    });
  }

  std::cout << "responses.json\n";
  const json responses = load(dir, "responses.json");
  for (const auto& c : responses["cases"]) {
    check::run("answer " + c["name"].get<std::string>(), [&] {
      const json& h = c["answer"]["headers"];
      const tollgate::Bytes body = b64(c["answer"]["body_b64"]);
      const std::string line = c.contains("download")
                                   ? tollgate::download_line(tollgate::sha256_hex(b64(c["download"]["file_b64"])), header(h, "content-range"))
                                   : tollgate::sha256_hex(body);
      std::vector<std::pair<std::string, std::string>> sent_headers;
      for (const auto& [k, v] : c["request"]["headers"].items()) sent_headers.emplace_back(k, v.get<std::string>());
      const tollgate::SignedRequest request{c["request"]["method"], c["request"]["target"], b64(c["request"]["body_b64"]),
                                            c["request"]["nonce"], sent_headers};
      CHECK_EQ(tollgate::credentials_sha256(sent_headers), c["request"]["credentials_sha256"].get<std::string>());
      const tollgate::Pinned pinned{c["request"]["app_id"], responses["root_public_key"]};
      const auto check = tollgate::verify_answer(pinned, strings(c["retired"]), request,
                                                 {c["answer"]["status"].get<int>(), header(h, "tollgate-signature"),
                                                  header(h, "tollgate-key-cert"), line});
      answer_verdicts.insert(tollgate::to_string(check.verdict));
      CHECK_EQ(std::string(tollgate::to_string(check.verdict)), c["expect"].get<std::string>());
      // Issue 24: what has() sees once the answer is in: the user's entitlements when it verified, nothing otherwise.
      if (c.contains("entitlements")) {
        json user;
        if (check.verdict == tollgate::AnswerVerdict::ok) user = json::parse(body.begin(), body.end())["user"];
        std::vector<std::string> codes;
        if (user.is_object())
          for (const auto& e : user["membership"].value("entitlements", json::array())) codes.push_back(e.get<std::string>());
        std::sort(codes.begin(), codes.end());
        CHECK_EQ(json(codes).dump(), c["entitlements"].dump());
        CHECK_EQ(user.is_object() && user["membership"].value("is_trial", false), c["is_trial"].get<bool>());
      }
      // Issue 25: what release_seat() returns once a DELETE /seats answer verified (held_until: a lease holds the seat).
      if (c.contains("seat_release")) {
        json got = nullptr;
        if (check.verdict == tollgate::AnswerVerdict::ok) {
          const json j = json::parse(body.begin(), body.end());
          got = {{"released", j.at("released").get<bool>()}, {"held_until", j.contains("held_until") ? j["held_until"] : json(nullptr)}};
        }
        CHECK_EQ(got.dump(), c["seat_release"].dump());
      }
    });
  }

  std::cout << "leases.json\n";
  const json leases = load(dir, "leases.json");
  for (const auto& c : leases["cases"]) {
    check::run("lease " + c["name"].get<std::string>(), [&] {
      tollgate::LeaseCheckInput in;
      in.pinned = {leases["app_id"], leases["root_public_key"]};
      in.retired = strings(c["retired"]);
      in.hardware_id = c["hardware_id"];
      in.state = {c["state"]["highest_trusted_time"], c["state"]["highest_seq"], c["state"]["runtime_used_ms"], c["state"]["dropped"],
                  c["state"].value("max_server_time", std::int64_t{0})};
      in.now = c["now"];
      const auto check = tollgate::check_lease(c["lease"], in);
      lease_verdicts.insert(tollgate::to_string(check.verdict));
      CHECK_EQ(std::string(tollgate::to_string(check.verdict)), c["expect"].get<std::string>());
      if (c.contains("renew_due")) CHECK_EQ(check.renew_due, c["renew_due"].get<bool>());
      // Issue 24: the entitlements has() sees offline at `now`, and is_trial (an older lease: none, false).
      if (check.verdict == tollgate::LeaseVerdict::ok) {
        CHECK_EQ(json(tollgate::live_entitlements(*check.payload, in.now)).dump(), c["entitlements"].dump());
        CHECK_EQ(check.payload->is_trial, c["is_trial"].get<bool>());
      }
    });
  }

  check::run("the vectors cover every verdict of docs/signing.md", [&] {
    CHECK_EQ(answer_verdicts.size(), 9u);
    CHECK_EQ(lease_verdicts.size(), 13u);
  });

  std::cout << "units\n";
  check::run("app-data folders per OS; an app id with path tricks is refused", [] {
    auto env = [](std::map<std::string, std::string> m) {
      return [m](const std::string& k) -> std::optional<std::string> {
        auto it = m.find(k);
        return it == m.end() ? std::nullopt : std::optional<std::string>(it->second);
      };
    };
    auto w = tollgate::app_data_folders("app-1", "win32", env({{"APPDATA", "C:\\Users\\u\\AppData\\Roaming"}, {"LOCALAPPDATA", "C:\\Users\\u\\AppData\\Local"}}), "C:\\Users\\u");
    CHECK_EQ(w.data, "C:\\Users\\u\\AppData\\Roaming\\tollgate\\app-1");
    CHECK_EQ(w.state, "C:\\Users\\u\\AppData\\Local\\tollgate\\app-1");
    auto m = tollgate::app_data_folders("app-1", "darwin", env({}), "/Users/u");
    CHECK_EQ(m.data, "/Users/u/Library/Application Support/tollgate/app-1");
    CHECK_EQ(m.state, "/Users/u/Library/Preferences/tollgate/app-1");
    auto l = tollgate::app_data_folders("app-1", "linux", env({}), "/home/u");
    CHECK_EQ(l.data, "/home/u/.local/share/tollgate/app-1");
    CHECK_EQ(l.state, "/home/u/.local/state/tollgate/app-1");
    auto x = tollgate::app_data_folders("app-1", "linux", env({{"XDG_DATA_HOME", "/d"}, {"XDG_STATE_HOME", "/s"}}), "/home/u");
    CHECK_EQ(x.data, "/d/tollgate/app-1");
    CHECK_EQ(x.state, "/s/tollgate/app-1");
    bool refused = false;
    try {
      tollgate::app_data_folders("../../etc", "linux", env({}), "/home/u");
    } catch (const tollgate::Error&) {
      refused = true;
    }
    CHECK(refused);
  });

  check::run("hardware id: hex SHA-256 of tollgate/hwid/v1, app id, machine id; stable per app, never the raw id", [] {
    CHECK_EQ(tollgate::hardware_id_from("app-a", "abc123"), tollgate::sha256_hex(std::string("tollgate/hwid/v1\napp-a\nabc123")));
    CHECK(tollgate::hardware_id_from("app-a", "abc123") != tollgate::hardware_id_from("app-b", "abc123"));
    std::string id;
    try {
      id = tollgate::hardware_id("app-a");  // Linux CI has /etc/machine-id; a machine without one says so
    } catch (const tollgate::Error& e) {
      CHECK(std::string(e.what()).find("pass your own hardware_id") != std::string::npos);
      return;
    }
    CHECK_EQ(id.size(), 64u);
    CHECK_EQ(tollgate::hardware_id("app-a"), id);
  });

  check::run("the file store: lease and two state copies in their folders, readable by the user alone", [] {
    const fs::path tmp = fs::temp_directory_path() / ("tollgate-cpp-store-" + std::to_string(::getpid()));
    fs::remove_all(tmp);
    tollgate::FileLeaseStore store({(tmp / "d").string(), (tmp / "s").string()});
    CHECK(!store.read_lease().has_value());
    store.write_lease("LEASE");
    store.write_state(0, "A");
    store.write_state(1, "B");
    CHECK_EQ(*store.read_lease(), "LEASE");
    CHECK_EQ(*store.read_state(0), "A");
    CHECK_EQ(*store.read_state(1), "B");
    struct stat st {};
    ::stat((tmp / "d" / "lease.tollgate").c_str(), &st);
    CHECK_EQ(st.st_mode & 077, 0u);
    ::stat((tmp / "s").c_str(), &st);
    CHECK_EQ(st.st_mode & 077, 0u);
    fs::remove_all(tmp);
  });

  return check::summary("vectors and units");
}
