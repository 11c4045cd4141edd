// The client's memory between runs: the rollback state (highest trusted time, highest seq, offline
// runtime used, dropped) plus the kids it learned, in two places with an HMAC; and the lease stores.
// The MAC's key derives from public values (app id, hardware id), so it only catches accidental edits and
// naive tampering (edit or delete a copy, restore one copy from a backup, copy the files to another machine): a determined user can
// recompute it and rewrite the state. What still holds then: a lease ends at its exp and never outlives its
// key's not_after. Every update re-reads, merges and writes under the store's lock (instances share it).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <thread>
#include <fstream>
#include <regex>
#include <sstream>

#ifdef _WIN32
#include <process.h>
#define TOLLGATE_GETPID _getpid
#else
#include <cerrno>
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>
#define TOLLGATE_GETPID getpid
#endif

#include "internal.hpp"

namespace fs = std::filesystem;

namespace tollgate {
namespace detail {

bool contains(const std::vector<std::string>& list, const std::string& item) {
  for (const auto& x : list)
    if (x == item) return true;
  return false;
}

// The field order of the TypeScript SDK's JSON.stringify (same state format, same files).
ordered_json state_to_json(const ClientState& s) {
  ordered_json j;
  j["highest_trusted_time"] = s.highest_trusted_time;
  j["highest_seq"] = s.highest_seq;
  j["runtime_used_ms"] = s.runtime_used_ms;
  j["dropped"] = s.dropped;
  j["retired"] = s.retired;
  j["known"] = s.known;
  j["keys_fetched_at"] = s.keys_fetched_at;
  j["clock_offset_ms"] = s.clock_offset_ms;
  j["max_server_time"] = s.max_server_time;
  j["newest_not_before"] = s.newest_not_before;
  j["newest_seen_at"] = s.newest_seen_at;
  return j;
}

namespace {

json fresh_json() { return json::parse(state_to_json(ClientState{}).dump()); }

// Numbers written by another SDK may carry fractions (a monotonic clock in ms): truncated.
bool read_number(const json& j, const char* key, std::int64_t& out) {
  const json& v = j.at(key);
  if (!v.is_number()) return false;
  out = v.is_number_float() ? static_cast<std::int64_t>(v.get<double>()) : v.get<std::int64_t>();
  return true;
}

bool read_strings(const json& j, const char* key, std::vector<std::string>& out) {
  const json& v = j.at(key);
  if (!v.is_array()) return false;
  for (const auto& x : v) {
    if (!x.is_string()) return false;
    out.push_back(x.get<std::string>());
  }
  return true;
}

bool state_from_json(const json& j, ClientState& s) {
  return read_number(j, "highest_trusted_time", s.highest_trusted_time) && read_number(j, "highest_seq", s.highest_seq) &&
         read_number(j, "runtime_used_ms", s.runtime_used_ms) && j.at("dropped").is_boolean() &&
         (s.dropped = j.at("dropped").get<bool>(), true) && read_strings(j, "retired", s.retired) &&
         read_strings(j, "known", s.known) && read_number(j, "keys_fetched_at", s.keys_fetched_at) &&
         read_number(j, "clock_offset_ms", s.clock_offset_ms) && read_number(j, "max_server_time", s.max_server_time) &&
         read_number(j, "newest_not_before", s.newest_not_before) && read_number(j, "newest_seen_at", s.newest_seen_at);
}

}  // namespace

StateKeeper::StateKeeper(std::shared_ptr<LeaseStore> store, const std::string& app_id, const std::string& hardware_id)
    : store_(std::move(store)), key_(sha256(to_bytes("tollgate/state-mac/v1\n" + app_id + "\n" + hardware_id))) {}

StateKeeper::Opened StateKeeper::open(const std::optional<std::string>& record, json& out) {
  if (!record) return Opened::absent;
  json outer = json::parse(*record, nullptr, false);
  if (outer.is_discarded() || !outer.is_object() || !outer.contains("state") || !outer.contains("mac") ||
      !outer["state"].is_string() || !outer["mac"].is_string())
    return Opened::bad;
  const std::string text = outer["state"].get<std::string>();
  if (!equal_constant_time(outer["mac"].get<std::string>(), hmac_sha256_hex(key_, text))) return Opened::bad;
  json inner = json::parse(text, nullptr, false);
  if (inner.is_discarded() || !inner.is_object()) return Opened::bad;
  out = fresh_json();
  for (auto& [k, v] : inner.items()) out[k] = v;  // {...freshState(), ...stored}
  return Opened::good;
}

LoadedState StateKeeper::load() {
  json a, b;
  const Opened oa = open(store_->read_state(0), a);
  const Opened ob = open(store_->read_state(1), b);
  LoadedState out;
  if (oa == Opened::bad || ob == Opened::bad) {
    out.tampered = true;
    return out;
  }
  const json* chosen = nullptr;
  if (oa == Opened::good && ob == Opened::good) {
    if (a != b) {
      out.tampered = true;
      return out;
    }
    chosen = &a;
  } else if (store_->read_lease().has_value()) {
    // While a lease is kept both copies must be there (issue 21.1): a surviving copy cannot prove it is the
    // latest, so one copy restored from a backup with the other deleted would undo a rollback or a drop. Only a
    // new lease from the server writes both again.
    out.tampered = true;
    return out;
  } else if (oa == Opened::good || ob == Opened::good) {
    chosen = oa == Opened::good ? &a : &b;  // no lease to protect: the key list and times are only a cache
  } else {
    return out;
  }
  ClientState s;
  try {
    if (!state_from_json(*chosen, s)) {
      out.tampered = true;
      return out;
    }
  } catch (const json::exception&) {
    out.tampered = true;
    return out;
  }
  out.state = s;
  return out;
}

void StateKeeper::save(const ClientState& state) {
  const std::string text = state_to_json(state).dump();
  ordered_json record;
  record["state"] = text;
  record["mac"] = hmac_sha256_hex(key_, text);
  const std::string r = record.dump();
  store_->write_state(0, r);
  store_->write_state(1, r);
}

ClientState merge(const ClientState& disk, const ClientState& mine, bool own_offset) {
  // As the TypeScript SDK: the runtime used and dropped belong to one lease: for the same lease (seq) the max and
  // the OR, otherwise the stored state's, which is the newer (every change of them is written at once, under the
  // lock): a new lease fetched by the other instance clears a drop, and a drop by the other instance holds.
  const bool same_lease = disk.highest_seq == mine.highest_seq;
  const ClientState& newer = mine.newest_not_before > disk.newest_not_before ? mine : disk;
  ClientState out;
  out.highest_trusted_time = std::max(disk.highest_trusted_time, mine.highest_trusted_time);
  out.highest_seq = disk.highest_seq;
  out.runtime_used_ms = same_lease ? std::max(disk.runtime_used_ms, mine.runtime_used_ms) : disk.runtime_used_ms;
  out.dropped = same_lease ? disk.dropped || mine.dropped : disk.dropped;
  out.retired = disk.retired;
  for (const auto& kid : mine.retired)
    if (!contains(out.retired, kid)) out.retired.push_back(kid);
  out.known = disk.known;
  for (const auto& kid : mine.known)
    if (!contains(out.known, kid)) out.known.push_back(kid);
  out.keys_fetched_at = std::max(disk.keys_fetched_at, mine.keys_fetched_at);
  // The clock offset is this instance's once it measured one from its own answers.
  out.clock_offset_ms = own_offset ? mine.clock_offset_ms : disk.clock_offset_ms;
  out.max_server_time = std::max(disk.max_server_time, mine.max_server_time);
  out.newest_not_before = newer.newest_not_before;
  out.newest_seen_at = disk.newest_not_before == mine.newest_not_before ? std::min(disk.newest_seen_at, mine.newest_seen_at)
                                                                         : newer.newest_seen_at;
  return out;
}

Memory::Memory(std::function<std::pair<std::shared_ptr<LeaseStore>, std::shared_ptr<StateKeeper>>()> open)
    : open_(std::move(open)) {}

void Memory::load() {
  if (loaded_) return;
  auto opened = open_();
  store_ = opened.first;
  keeper_ = opened.second;
  loaded_ = true;
  locked([] {});  // reads the stored state under the lock
  last_written_time_ = state_.highest_trusted_time;
}

void Memory::locked(const std::function<void()>& fn) {
  std::lock_guard<std::recursive_mutex> guard(mutex_);
  load();
  if (depth_ > 0) {
    fn();
    return;
  }
  std::shared_ptr<void> held = store_->lock();
  depth_++;
  struct Leave {
    int& depth;
    ~Leave() { depth--; }
  } leave{depth_};
  sync();
  fn();
}

void Memory::sync() {
  LoadedState disk = keeper_->load();
  if (disk.tampered) {
    tampered_ = true;  // kept in memory as it is; never written back over the evidence
  } else {
    state_ = merge(disk.state, state_, own_offset_);
    tampered_ = false;
  }
}

const ClientState& Memory::state() {
  std::lock_guard<std::recursive_mutex> guard(mutex_);
  load();
  return state_;
}

bool Memory::tampered() {
  std::lock_guard<std::recursive_mutex> guard(mutex_);
  load();
  return tampered_;
}

namespace {
/** How far the remembered server time may move before it is written again. */
constexpr std::int64_t TIME_WRITE_STEP_MS = 60000;
}

void Memory::update(const std::function<void(ClientState&)>& change, bool reset, bool lazy, bool own_offset) {
  std::lock_guard<std::recursive_mutex> guard(mutex_);
  load();
  if (own_offset) own_offset_ = true;
  if (lazy) {
    // A time-only change: written (merged) once it moved a minute.
    change(state_);
    if (std::llabs(state_.highest_trusted_time - last_written_time_) < TIME_WRITE_STEP_MS) return;
  }
  locked([&] {
    if (reset) {
      ClientState fresh;
      fresh.retired = state_.retired;
      fresh.known = state_.known;
      fresh.keys_fetched_at = state_.keys_fetched_at;
      fresh.max_server_time = state_.max_server_time;
      fresh.newest_not_before = state_.newest_not_before;
      fresh.newest_seen_at = state_.newest_seen_at;
      fresh.clock_offset_ms = state_.clock_offset_ms;
      state_ = fresh;
      tampered_ = false;
    }
    if (!lazy) change(state_);
    // A tampered state is not written back: only a new lease from the server clears it.
    if (tampered_) return;
    last_written_time_ = state_.highest_trusted_time;
    keeper_->save(state_);
  });
}

}  // namespace detail

// ---------------------------------------------------------------- folders and the file store

Folders app_data_folders(const std::string& app_id, const std::string& platform,
                         const std::function<std::optional<std::string>(const std::string&)>& env,
                         const std::string& home) {
  static const std::regex SAFE("^[A-Za-z0-9_-]{1,128}$");
  if (!std::regex_match(app_id, SAFE)) throw Error("app id: letters, digits, _ and - only");  // no path tricks
  const std::string sep = platform == "win32" ? "\\" : "/";
  auto join = [&](std::initializer_list<std::string> parts) {
    std::string out;
    for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
    return out;
  };
  auto under = [&](const std::string& base) { return join({base, "tollgate", app_id}); };
  if (platform == "win32") {
    auto roaming = env("APPDATA");
    auto local = env("LOCALAPPDATA");
    return {under(roaming ? *roaming : join({home, "AppData", "Roaming"})),
            under(local ? *local : join({home, "AppData", "Local"}))};
  }
  if (platform == "darwin")
    return {under(join({home, "Library", "Application Support"})), under(join({home, "Library", "Preferences"}))};
  auto data = env("XDG_DATA_HOME");
  auto state = env("XDG_STATE_HOME");
  return {under(data && !data->empty() ? *data : join({home, ".local", "share"})),
          under(state && !state->empty() ? *state : join({home, ".local", "state"}))};
}

Folders app_data_folders(const std::string& app_id) {
  auto env = [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
#ifdef _WIN32
  const char* profile = std::getenv("USERPROFILE");
  return app_data_folders(app_id, "win32", env, profile ? profile : "C:\\");
#else
  std::string home;
  if (const char* h = std::getenv("HOME"); h && *h) {
    home = h;
  } else if (const passwd* pw = getpwuid(getuid()); pw && pw->pw_dir) {
    home = pw->pw_dir;
  } else {
    throw Error("tollgate: no home directory; pass a lease_store");
  }
#ifdef __APPLE__
  return app_data_folders(app_id, "darwin", env, home);
#else
  return app_data_folders(app_id, "linux", env, home);
#endif
#endif
}

FileLeaseStore::FileLeaseStore(Folders folders) : folders_(std::move(folders)) {}

std::shared_ptr<FileLeaseStore> FileLeaseStore::for_app(const std::string& app_id) {
  return std::make_shared<FileLeaseStore>(app_data_folders(app_id));
}

namespace {

std::optional<std::string> read_file(const std::string& folder, const std::string& name) {
  const fs::path path = fs::u8path(folder) / name;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::error_code ec;
    if (!fs::exists(path, ec)) return std::nullopt;
    throw Error("tollgate: cannot read " + path.string());
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_file(const std::string& folder, const std::string& name, const std::string& text) {
  const fs::path dir = fs::u8path(folder);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("tollgate: cannot create " + dir.string() + ": " + ec.message());
#ifndef _WIN32
  ::chmod(dir.c_str(), 0700);
#endif
  const fs::path target = dir / name;
  // Unique per process and thread: two instances (or two clients in one process) never share a temp file.
  static std::atomic<unsigned> counter{0};
  const fs::path temp = dir / (name + "." + std::to_string(TOLLGATE_GETPID()) + "." +
                               std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()) % 1000000) + "." +
                               std::to_string(counter++) + ".tmp");
  // A crash mid-write leaves the old file whole: a half-written state would look like tampering.
#ifndef _WIN32
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) throw Error("tollgate: cannot write " + temp.string());
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      ::close(fd);
      throw Error("tollgate: cannot write " + temp.string());
    }
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
#else
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) throw Error("tollgate: cannot write " + temp.string());
  }
#endif
  fs::rename(temp, target, ec);
  if (ec) throw Error("tollgate: cannot write " + target.string() + ": " + ec.message());
}

}  // namespace

std::optional<std::string> FileLeaseStore::read_lease() { return read_file(folders_.data, "lease.tollgate"); }
void FileLeaseStore::write_lease(const std::string& file) { write_file(folders_.data, "lease.tollgate", file); }
std::optional<std::string> FileLeaseStore::read_state(int slot) {
  return read_file(slot == 0 ? folders_.data : folders_.state, "state.json");
}
void FileLeaseStore::write_state(int slot, const std::string& record) {
  write_file(slot == 0 ? folders_.data : folders_.state, "state.json", record);
}

std::shared_ptr<void> FileLeaseStore::lock() {
  const fs::path dir = fs::u8path(folders_.data);
  std::error_code ec;
  fs::create_directories(dir, ec);
#ifndef _WIN32
  ::chmod(dir.c_str(), 0700);
#endif
  const fs::path path = dir / "state.lock";
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::milliseconds(LOCK_WAIT_MS);
  auto pause = std::chrono::milliseconds(2);
  for (int attempt = 0; attempt < 100000; attempt++) {
#ifndef _WIN32
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd >= 0) {
      const std::string pid = std::to_string(TOLLGATE_GETPID()) + "\n";
      (void)!::write(fd, pid.data(), pid.size());
      ::close(fd);
      return std::shared_ptr<void>(new fs::path(path), [](void* p) {
        auto* held = static_cast<fs::path*>(p);
        std::error_code ignored;
        fs::remove(*held, ignored);
        delete held;
      });
    }
    if (errno != EEXIST) throw Error("tollgate: cannot create " + path.string());
#else
    {
      std::FILE* f = std::fopen(path.string().c_str(), "wx");
      if (f) {
        std::fprintf(f, "%d\n", TOLLGATE_GETPID());
        std::fclose(f);
        return std::shared_ptr<void>(new fs::path(path), [](void* p) {
          auto* held = static_cast<fs::path*>(p);
          std::error_code ignored;
          fs::remove(*held, ignored);
          delete held;
        });
      }
    }
#endif
    // Left over from a crashed process (older than LOCK_STALE_MS), or held too long: taken over.
    const auto modified = fs::last_write_time(path, ec);
    if (ec) continue;  // released meanwhile
    const auto age = fs::file_time_type::clock::now() - modified;
    if (age > std::chrono::milliseconds(LOCK_STALE_MS) || clock::now() > deadline) {
      fs::remove(path, ec);
      continue;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
  throw Error("tollgate: cannot take " + path.string());
}

std::shared_ptr<void> MemoryLeaseStore::lock() {
  if (!mutex_) mutex_ = std::make_shared<std::mutex>();
  auto m = std::static_pointer_cast<std::mutex>(mutex_);
  m->lock();
  return std::shared_ptr<void>(m.get(), [m](void*) { m->unlock(); });
}

}  // namespace tollgate
