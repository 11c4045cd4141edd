// One signed exchange with the server (libcurl): a fresh nonce, the exact bytes sent, and the answer
// verified (docs/signing.md) before anything reads its body. Also what the client learns from verified
// answers: the server's time, new and retired kids, and the codes that drop an offline lease.
#include <algorithm>
#include <chrono>
#include <curl/curl.h>
#include <exception>
#include <mutex>

#include "internal.hpp"

namespace tollgate::detail {

namespace {
/** How far apart the server's nodes' clocks may be. */
constexpr std::int64_t SERVER_CLOCK_TOLERANCE_MS = 5 * 60 * 1000;
/** An unknown kid is looked up at most this often, and a failed key-list fetch retried after this long. */
constexpr std::int64_t UNKNOWN_KID_REFRESH_GAP_MS = 60 * 1000;
/** At most this many key-list fetches a minute for unknown kids, however many an emulator invents. */
constexpr std::size_t UNKNOWN_KID_LOOKUPS_PER_MINUTE = 4;
/** Amendment D: answers signed by a key older than the newest one verified are refused this long after it. */
constexpr std::int64_t OLDER_KEY_GRACE_MS = 10 * 60 * 1000;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

void ensure_curl() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) throw Error("tollgate: libcurl failed to initialise");
  });
}

struct Exchange {
  HttpAnswer head;
  const SignedRequest* sent = nullptr;
  Streaming* streaming = nullptr;
  bool head_done = false;
  std::exception_ptr error;

  void finish_head() {
    if (head_done) return;
    head_done = true;
    if (streaming->on_head) streaming->on_head(*sent, head);
  }
};

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  const size_t n = size * count;
  std::string line(data, n);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  if (line.rfind("HTTP/", 0) == 0) {
    ex->head.headers.clear();  // a new header block (an interim 1xx answer came first)
    auto sp = line.find(' ');
    ex->head.status = sp == std::string::npos ? 0 : std::atoi(line.c_str() + sp + 1);
    return n;
  }
  auto colon = line.find(':');
  if (colon == std::string::npos) return n;
  std::string name = lower(line.substr(0, colon));
  std::string value = line.substr(colon + 1);
  auto b = value.find_first_not_of(" \t");
  value = b == std::string::npos ? "" : value.substr(b, value.find_last_not_of(" \t") - b + 1);
  auto it = ex->head.headers.find(name);
  if (it == ex->head.headers.end())
    ex->head.headers.emplace(name, value);
  else
    it->second += ", " + value;
  return n;
}

size_t on_write(char* data, size_t size, size_t count, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  const size_t n = size * count;
  try {
    ex->finish_head();
    if (ex->streaming->on_body) ex->streaming->on_body(data, n);
  } catch (...) {
    ex->error = std::current_exception();
    return 0;  // aborts the transfer
  }
  return n;
}

}  // namespace

std::optional<std::string> HttpAnswer::header(const std::string& name) const {
  auto it = headers.find(lower(name));
  if (it == headers.end()) return std::nullopt;
  return it->second;
}

std::int64_t SystemClock::now() const {
  if (clock.now) return clock.now();
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::int64_t SystemClock::monotonic() const {
  if (clock.monotonic) return clock.monotonic();
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

bool drops_lease(const std::string& code) {
  static const std::set<std::string> codes = {"banned", "membership_inactive", "invalid_credentials",
                                              "invalid_license", "device_mismatch", "device_limit"};
  return codes.count(code) > 0;
}

void check_header_value(const std::string& name, const std::string& value) {
  if (value.find_first_of(std::string("\r\n\0", 3)) != std::string::npos)
    throw Error("tollgate: the " + name + " header value contains CR, LF or NUL");
}

std::string percent_encode_component(const std::string& text) {
  // encodeURIComponent's unreserved set.
  static const std::string keep = "-_.!~*'()";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || keep.find(static_cast<char>(c)) != std::string::npos) {
      out.push_back(static_cast<char>(c));
    } else {
      static const char* digits = "0123456789ABCDEF";
      out += '%';
      out.push_back(digits[c >> 4]);
      out.push_back(digits[c & 15]);
    }
  }
  return out;
}

Transport::Transport(TransportOptions options, Memory& memory) : o_(std::move(options)), memory_(memory) {}

SignedRequest Transport::fetch(const Outgoing& req, Streaming& streaming, HttpAnswer& head) {
  ensure_curl();
  std::string base = o_.base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  const std::string url = base + req.path;
  // The target is what goes on the request line: the path (with the base URL's prefix) and query.
  const auto scheme = url.find("://");
  const auto slash = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  SignedRequest sent;
  sent.method = req.method;
  sent.target = slash == std::string::npos ? "/" : url.substr(slash);
  if (auto hash = sent.target.find('#'); hash != std::string::npos) sent.target.resize(hash);
  if (req.json_body) sent.body = to_bytes(*req.json_body);
  sent.nonce = new_nonce();

  std::vector<std::pair<std::string, std::string>> headers = {
      {"x-api-key", o_.app_key}, {"x-api-secret", o_.app_secret}, {"tollgate-nonce", sent.nonce}};
  if (req.json_body) headers.emplace_back("content-type", "application/json");
  for (const auto& h : req.headers) headers.push_back(h);
  // Exactly the headers sent: the credential headers among them are in the signed bytes, so the answer must be
  // for them, not for a user a proxy swapped in.
  sent.headers = headers;

  CURL* curl = curl_easy_init();
  if (!curl) throw NetworkError("tollgate: curl_easy_init failed");
  curl_slist* list = nullptr;
  Exchange ex;
  ex.streaming = &streaming;
  ex.sent = &sent;
  CURLcode rc;
  try {
    for (const auto& [name, value] : headers) {
      check_header_value(name, value);
      list = curl_slist_append(list, (name + ": " + value).c_str());
    }
    list = curl_slist_append(list, "Expect:");
    if (req.method == "POST" && !req.json_body) list = curl_slist_append(list, "Content-Type:");
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_PATH_AS_IS, 1L);  // send the target byte for byte: it is signed
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);  // another target would not be what we sign over
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, o_.connect_timeout_ms);
    if (streaming.long_transfer) {
      curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
      curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, std::max(1L, o_.timeout_ms / 1000));
    } else {
      curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, o_.timeout_ms);
    }
    if (!o_.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, o_.ca_file.c_str());
    if (req.method == "POST") {
      curl_easy_setopt(curl, CURLOPT_POST, 1L);
      curl_easy_setopt(curl, CURLOPT_POSTFIELDS, sent.body.empty() ? "" : reinterpret_cast<const char*>(sent.body.data()));
      curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(sent.body.size()));
    } else if (req.method != "GET") {
      curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, req.method.c_str());
    }
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &ex);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &ex);
    rc = curl_easy_perform(curl);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    ex.head.status = static_cast<int>(status);
  } catch (...) {
    curl_slist_free_all(list);
    curl_easy_cleanup(curl);
    throw;
  }
  curl_slist_free_all(list);
  curl_easy_cleanup(curl);
  if (ex.error) std::rethrow_exception(ex.error);
  if (rc != CURLE_OK)
    throw NetworkError(std::string("tollgate: ") + curl_easy_strerror(rc) + " (" + url + ")",
                       rc == CURLE_OPERATION_TIMEDOUT ? "timeout" : "connection");
  // An empty body never reached the write callback: the head is handled now.
  if (!ex.head_done) {
    ex.head_done = true;
    if (streaming.on_head) streaming.on_head(sent, ex.head);
  }
  head = ex.head;
  return sent;
}

Verified Transport::send(const Outgoing& req) {
  Verified out;
  Streaming streaming;
  streaming.on_body = [&](const char* data, std::size_t n) { out.body.insert(out.body.end(), data, data + n); };
  HttpAnswer head;
  const SignedRequest sent = fetch(req, streaming, head);
  out.answer = head;
  out.status = head.status;
  return settle(req, sent, out);
}

Verified Transport::settle(const Outgoing& req, const SignedRequest& sent, Verified answer) {
  if (answer.status >= 500) {
    // An unsigned 5xx is no answer from Tollgate (a proxy, or the server while its database is down): unavailable,
    // not a forgery. A signed one is verified first, so a forged signature is still a VerificationError.
    std::optional<std::int64_t> retry_after;
    if (auto h = answer.answer.header("retry-after"); h && !h->empty() && h->size() < 10 &&
                                                       h->find_first_not_of("0123456789") == std::string::npos)
      retry_after = std::stoll(*h);
    if (!answer.answer.header("tollgate-signature")) throw UnavailableError(answer.status, false, std::nullopt, retry_after);
    verify(sent, answer.answer, sha256_hex(answer.body));
    json parsed = json::parse(answer.body.begin(), answer.body.end(), nullptr, false);
    std::optional<std::string> code;
    if (parsed.is_object() && parsed.contains("code") && parsed["code"].is_string()) code = parsed["code"].get<std::string>();
    throw UnavailableError(answer.status, true, code, retry_after);
  }
  answer.t = verify(sent, answer.answer, sha256_hex(answer.body)).first;
  if (answer.status >= 400) refuse(req, answer);
  return answer;
}

std::pair<std::int64_t, std::string> Transport::verify(const SignedRequest& sent_request, const HttpAnswer& answer,
                                                       const std::string& response_line) {
  // A 413 is answered before the server reads the body: it is signed over the empty body's hash (docs/signing.md).
  SignedRequest unread;
  if (answer.status == 413) {
    unread = sent_request;
    unread.body.clear();
  }
  const SignedRequest& sent = answer.status == 413 ? unread : sent_request;
  const auto signature = answer.header("tollgate-signature");
  const auto certificate = answer.header("tollgate-key-cert");
  memory_.locked([] {});  // the state now: what other instances of the app wrote since is merged in
  if (signature) {
    if (auto parsed = parse_signature_header(*signature); parsed && !contains(memory_.state().known, parsed->kid))
      refresh_keys(parsed->kid);
  }
  const ClientState& state = memory_.state();
  const std::set<std::string> retired(state.retired.begin(), state.retired.end());
  const AnswerCheck check =
      verify_answer(o_.pinned, retired, sent, ReceivedAnswer{answer.status, signature, certificate, response_line});
  if (check.verdict != AnswerVerdict::ok) throw VerificationError(check.verdict, answer.status);
  // Beyond the contract's steps: an ended key that signs a back-dated t (a leaked old private key) is still
  // expired once we have seen the server's time past its end.
  if (*check.not_after < max_server_time() - SERVER_CLOCK_TOLERANCE_MS)
    throw VerificationError(AnswerVerdict::key_expired, answer.status);
  // An older key than the newest one verified is refused 10 minutes after that one was first seen: every node
  // signs with the new key within the cache TTL (1 s), so an older key after that is a leaked one, even when a
  // proxy blocks GET /signing_keys so that its retirement is never seen.
  const std::int64_t now =
      std::max({max_server_time(), state.highest_trusted_time, o_.clock.now() + state.clock_offset_ms});
  if (state.newest_not_before > 0 && *check.not_before < state.newest_not_before &&
      now >= state.newest_seen_at + OLDER_KEY_GRACE_MS)
    throw VerificationError(AnswerVerdict::key_retired, answer.status);
  learn(*check.t, *check.not_before);
  return {*check.t, *check.kid};
}

std::int64_t Transport::max_server_time() { return std::max(memory_.state().max_server_time, o_.server_time_floor); }

void Transport::learn(std::int64_t t, std::int64_t not_before) {
  const std::int64_t now = o_.clock.now();
  memory_.last_tick.reset();  // time spent online is not offline runtime
  const bool newer = not_before > memory_.state().newest_not_before;
  const std::int64_t fetched_at = memory_.state().keys_fetched_at;
  memory_.update(
      [&](ClientState& s) {
        // The server's time, from an answer to our own fresh nonce: the best clock there is. A max: a node whose
        // clock lags, or another instance's older write, never lowers it.
        s.highest_trusted_time = std::max(s.highest_trusted_time, t);
        s.max_server_time = std::max(s.max_server_time, t);
        s.clock_offset_ms = t - now;
        if (not_before > s.newest_not_before) {
          s.newest_not_before = not_before;
          s.newest_seen_at = t;
        }
      },
      false, !newer, true);
  if (now - fetched_at >= o_.key_refresh_ms) refresh_keys(std::nullopt);
}

KeyList Transport::fetch_key_list() {
  const bool was_refreshing = refreshing_;
  refreshing_ = true;  // the key list's own answer must not trigger another refresh
  struct Restore {
    bool& flag;
    bool value;
    ~Restore() { flag = value; }
  } restore{refreshing_, was_refreshing};
  const Verified res = send(Outgoing{"GET", "/signing_keys", std::nullopt, {}, false});
  KeyList list;
  try {
    const json j = json::parse(res.body.begin(), res.body.end());
    for (const auto& k : j.at("keys"))
      list.keys.push_back(SigningKey{k.at("kid").get<std::string>(), k.at("certificate").get<std::string>(),
                                     k.at("status").get<std::string>()});
    for (const auto& kid : j.at("retired")) list.retired.push_back(kid.get<std::string>());
  } catch (const json::exception& e) {
    throw Error(std::string("tollgate: unexpected key list: ") + e.what());
  }
  // Recorded only once it worked: a blocked or failed fetch must not postpone the next one by a day.
  const std::int64_t fetched_at = o_.clock.now();
  memory_.update([&](ClientState& s) {
    s.keys_fetched_at = std::max(s.keys_fetched_at, fetched_at);
    for (const auto& kid : list.retired)
      if (!contains(s.retired, kid)) s.retired.push_back(kid);
    for (const auto& k : list.keys)
      if (!contains(s.known, k.kid)) s.known.push_back(k.kid);
  });
  return list;
}

void Transport::refresh_keys(const std::optional<std::string>& unknown_kid) {
  // Bounded: one lookup per kid a minute and a few a minute in all (an emulator inventing kids cannot make us
  // fetch per answer); a failed fetch is retried a minute later. A kid becomes known only from a verified key
  // list, so an unknown kid whose lookup failed or was skipped is looked up again later.
  if (refreshing_) return;
  const std::int64_t mono = o_.clock.monotonic();
  if (retry_at_ && mono < *retry_at_) return;
  if (unknown_kid) {
    for (auto it = looked_up_.begin(); it != looked_up_.end();)
      it = mono - it->second >= UNKNOWN_KID_REFRESH_GAP_MS || mono < it->second ? looked_up_.erase(it) : std::next(it);
    if (looked_up_.count(*unknown_kid) || looked_up_.size() >= UNKNOWN_KID_LOOKUPS_PER_MINUTE) return;
    looked_up_[*unknown_kid] = mono;
  }
  try {
    fetch_key_list();
  } catch (const std::exception&) {
    // Unreachable, unavailable, refused or unverifiable (docs/signing.md: a failed fetch is retried later):
    // the answer that triggered it is still verified on its own, by its certificate under the pinned root.
    retry_at_ = mono + UNKNOWN_KID_REFRESH_GAP_MS;
  }
}

void Transport::refuse(const Outgoing& req, const Verified& answer) {
  json parsed = json::parse(answer.body.begin(), answer.body.end(), nullptr, false);
  std::string code = "unknown_error", detail;
  std::optional<std::string> ban_reason, user_id;
  std::vector<FieldError> field_errors;
  if (parsed.is_object()) {
    if (parsed.contains("code") && parsed["code"].is_string()) code = parsed["code"].get<std::string>();
    if (parsed.contains("detail") && parsed["detail"].is_string()) detail = parsed["detail"].get<std::string>();
    if (parsed.contains("ban_reason") && parsed["ban_reason"].is_string()) ban_reason = parsed["ban_reason"].get<std::string>();
    if (parsed.contains("user_id") && parsed["user_id"].is_string()) user_id = parsed["user_id"].get<std::string>();
    if (parsed.contains("errors") && parsed["errors"].is_array())
      for (const auto& e : parsed["errors"])
        if (e.is_object() && e.contains("field") && e["field"].is_string())
          field_errors.push_back(FieldError{e["field"].get<std::string>(),
                                            e.contains("message") && e["message"].is_string() ? e["message"].get<std::string>() : ""});
  }
  // Only a refusal about the lease's own user, or about this machine, drops it (issue 21.2): not another user's.
  if (req.drops_lease && drops_lease(code) && (!about_lease_user || about_lease_user(req, code, user_id)))
    memory_.update([](ClientState& s) { s.dropped = true; });
  throw ApiError(answer.status, code, detail, field_errors, ban_reason, user_id, std::string(answer.body.begin(), answer.body.end()));
}

}  // namespace tollgate::detail
