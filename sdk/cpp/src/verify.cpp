// Certificates, signed answers and offline leases (docs/signing.md): the ordered checks, the first
// failure being the verdict. Pure functions: the rollback state and the clock are inputs.
#include <algorithm>
#include <cctype>
#include <regex>

#include "internal.hpp"

namespace tollgate {
namespace detail {

namespace {
constexpr std::int64_t MAX_CERT_VALIDITY_MS = 90LL * 24 * 3600 * 1000;
const char* LEASE_BEGIN = "-----BEGIN TOLLGATE LEASE-----";
const char* LEASE_END = "-----END TOLLGATE LEASE-----";

std::string join_lines(std::initializer_list<std::string> lines) {
  std::string out;
  bool first = true;
  for (const auto& l : lines) {
    if (!first) out += '\n';
    out += l;
    first = false;
  }
  return out;
}
}  // namespace

std::optional<Certificate> decode_certificate(const std::string& encoded) {
  auto o = decode_json_object(encoded);
  if (!o || !has_exact_keys(*o, {"v", "app_id", "kid", "public_key", "not_before", "not_after", "sig"})) return std::nullopt;
  auto v = safe_integer((*o)["v"]);
  if (!v || *v != 1) return std::nullopt;
  for (const char* k : {"app_id", "kid", "public_key", "sig"})
    if (!(*o)[k].is_string()) return std::nullopt;
  auto nb = safe_integer((*o)["not_before"]);
  auto na = safe_integer((*o)["not_after"]);
  if (!nb || !na) return std::nullopt;
  Certificate c;
  c.app_id = (*o)["app_id"].get<std::string>();
  c.kid = (*o)["kid"].get<std::string>();
  c.public_key = (*o)["public_key"].get<std::string>();
  c.not_before = *nb;
  c.not_after = *na;
  auto pk = b64url_decode(c.public_key);
  auto sig = b64url_decode((*o)["sig"].get<std::string>());
  if (!pk || pk->size() != 32 || !sig || sig->size() != 64) return std::nullopt;
  c.public_key_bytes = *pk;
  c.sig_bytes = *sig;
  return c;
}

bool certificate_covers(const Certificate& c, std::int64_t t) {
  const std::int64_t validity = c.not_after - c.not_before;
  return validity > 0 && validity <= MAX_CERT_VALIDITY_MS && t >= c.not_before && t <= c.not_after;
}

CertificateVerdict check_certificate_chain(const std::string& encoded, const Pinned& pinned, Certificate& out) {
  auto cert = decode_certificate(encoded);
  auto root = b64url_decode(pinned.root_public_key);
  if (!cert || !root) return CertificateVerdict::bad_certificate;
  // The signed bytes are rebuilt from the fields, never by re-serialising JSON.
  const std::string input = join_lines({"tollgate/keycert/v1", cert->app_id, cert->kid, cert->public_key,
                                        std::to_string(cert->not_before), std::to_string(cert->not_after)});
  if (!ed25519_verify(*root, cert->sig_bytes, to_bytes(input))) return CertificateVerdict::bad_certificate;
  if (cert->app_id != pinned.app_id) return CertificateVerdict::wrong_app;
  out = std::move(*cert);
  return CertificateVerdict::ok;
}

std::optional<SignatureHeader> parse_signature_header(const std::string& value) {
  static const std::regex HEADER("^v1; kid=([A-Za-z0-9_-]{1,64}); t=([0-9]{1,16}); sig=([A-Za-z0-9_-]{86})$");
  std::smatch m;
  if (!std::regex_match(value, m, HEADER)) return std::nullopt;
  auto sig = b64url_decode(m[3].str());
  const std::int64_t t = std::stoll(m[2].str());
  if (!sig || sig->size() != 64 || t > 9007199254740991LL) return std::nullopt;
  return SignatureHeader{m[1].str(), t, *sig};
}

namespace {

struct ParsedLease {
  std::string kid, cert;
  Bytes payload_bytes, sig;
  LeasePayload payload;
};

std::string trim(const std::string& s) {
  const char* ws = " \t\n\r\f\v";
  auto b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

std::optional<LeasePayload> payload_of(const Bytes& bytes) {
  json p = json::parse(bytes.begin(), bytes.end(), nullptr, false);
  if (p.is_discarded()) return std::nullopt;
  // Issue 24's entitlements and is_trial: both (a server with entitlements) or neither (an older lease).
  const bool v24 = has_exact_keys(p, {"lease_id", "seq", "app_id", "user_id", "hwid_hash", "is_lifetime", "active_until",
                                      "iat", "renew_after", "exp", "max_offline_runtime_s", "entitlements", "is_trial"});
  if (!v24 && !has_exact_keys(p, {"lease_id", "seq", "app_id", "user_id", "hwid_hash", "is_lifetime",
                                  "active_until", "iat", "renew_after", "exp", "max_offline_runtime_s"}))
    return std::nullopt;
  std::vector<LeaseEntitlement> entitlements;
  if (v24) {
    if (!p["entitlements"].is_array() || !p["is_trial"].is_boolean()) return std::nullopt;
    for (const auto& e : p["entitlements"]) {
      if (!e.is_object() || !has_exact_keys(e, {"code", "until"}) || !e["code"].is_string()) return std::nullopt;
      LeaseEntitlement le{e["code"].get<std::string>(), std::nullopt};
      if (!e["until"].is_null()) {
        auto until = safe_integer(e["until"]);
        if (!until) return std::nullopt;
        le.until = *until;
      }
      entitlements.push_back(std::move(le));
    }
  }
  for (const char* k : {"lease_id", "app_id", "user_id", "hwid_hash"})
    if (!p[k].is_string()) return std::nullopt;
  LeasePayload out;
  auto seq = safe_integer(p["seq"]);
  if (!seq || *seq < 1 || !p["is_lifetime"].is_boolean()) return std::nullopt;
  if (!p["active_until"].is_null()) {
    auto au = safe_integer(p["active_until"]);
    if (!au) return std::nullopt;
    out.active_until = *au;
  }
  auto iat = safe_integer(p["iat"]), renew = safe_integer(p["renew_after"]), exp = safe_integer(p["exp"]),
       budget = safe_integer(p["max_offline_runtime_s"]);
  if (!iat || !renew || !exp || !budget) return std::nullopt;
  // A lease ends after it starts and within its own runtime budget.
  if (*exp < *iat || *exp - *iat > *budget * 1000) return std::nullopt;
  out.lease_id = p["lease_id"].get<std::string>();
  out.app_id = p["app_id"].get<std::string>();
  out.user_id = p["user_id"].get<std::string>();
  out.hwid_hash = p["hwid_hash"].get<std::string>();
  out.seq = *seq;
  out.is_lifetime = p["is_lifetime"].get<bool>();
  out.iat = *iat;
  out.renew_after = *renew;
  out.exp = *exp;
  out.max_offline_runtime_s = *budget;
  out.entitlements = std::move(entitlements);
  out.is_trial = v24 && p["is_trial"].get<bool>();
  return out;
}

std::optional<ParsedLease> parse_lease(const std::string& file) {
  // Lines split on \n or \r\n; the body lines are joined without whitespace.
  std::vector<std::string> lines;
  const std::string text = trim(file);
  std::size_t at = 0;
  for (;;) {
    auto nl = text.find('\n', at);
    std::string line = text.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
    if (nl != std::string::npos && !line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  if (lines.size() < 3 || lines.front() != LEASE_BEGIN || lines.back() != LEASE_END) return std::nullopt;
  std::string body;
  for (std::size_t i = 1; i + 1 < lines.size(); i++) body += lines[i];
  auto o = decode_json_object(body);
  if (!o || !has_exact_keys(*o, {"v", "kid", "cert", "payload", "sig"})) return std::nullopt;
  auto v = safe_integer((*o)["v"]);
  if (!v || *v != 1) return std::nullopt;
  for (const char* k : {"kid", "cert", "payload", "sig"})
    if (!(*o)[k].is_string()) return std::nullopt;
  auto payload_bytes = b64url_decode((*o)["payload"].get<std::string>());
  auto sig = b64url_decode((*o)["sig"].get<std::string>());
  if (!payload_bytes || !sig) return std::nullopt;
  auto payload = payload_of(*payload_bytes);
  if (!payload) return std::nullopt;
  return ParsedLease{(*o)["kid"].get<std::string>(), (*o)["cert"].get<std::string>(), *payload_bytes, *sig, *payload};
}

LeaseVerdict verdict_of_payload(const LeasePayload& p, const LeaseCheckInput& in) {
  if (p.hwid_hash != sha256_hex(in.pinned.app_id + "\n" + in.hardware_id)) return LeaseVerdict::hardware_mismatch;
  if (p.seq < in.state.highest_seq) return LeaseVerdict::superseded;
  if (in.state.dropped) return LeaseVerdict::dropped;
  if (in.tampered || in.now < std::max(in.state.highest_trusted_time, p.iat) - ROLLBACK_TOLERANCE_MS)
    return LeaseVerdict::clock_rollback;
  if (in.now >= p.exp) return LeaseVerdict::expired;
  if (in.state.runtime_used_ms >= p.max_offline_runtime_s * 1000) return LeaseVerdict::runtime_exhausted;
  return LeaseVerdict::ok;
}

}  // namespace
}  // namespace detail

using namespace detail;

CertificateVerdict check_certificate(const std::string& encoded, const Pinned& pinned, std::int64_t at) {
  Certificate cert;
  auto verdict = check_certificate_chain(encoded, pinned, cert);
  if (verdict != CertificateVerdict::ok) return verdict;
  return certificate_covers(cert, at) ? CertificateVerdict::ok : CertificateVerdict::key_expired;
}

const char* const CREDENTIAL_HEADERS[5] = {"authorization", "x-api-license-code", "x-api-username", "x-api-password",
                                           "x-hardware-id"};

std::string credentials_sha256(const std::vector<std::pair<std::string, std::string>>& headers) {
  std::string text;
  for (const char* name : CREDENTIAL_HEADERS) {
    for (const auto& [k, v] : headers) {
      std::string lower = k;
      for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (lower != name) continue;
      const auto b = v.find_first_not_of(" \t");
      const std::string value = b == std::string::npos ? "" : v.substr(b, v.find_last_not_of(" \t") - b + 1);
      text += std::string(name) + ":" + value + "\n";
      break;  // the first one, as the server reads it
    }
  }
  return sha256_hex(text);
}

std::string download_line(const std::string& file_sha256_hex, const std::optional<std::string>& content_range) {
  return "file-sha256=" + file_sha256_hex + "; content-range=" + content_range.value_or("");
}

AnswerCheck verify_answer(const Pinned& pinned, const std::set<std::string>& retired, const SignedRequest& request,
                          const ReceivedAnswer& answer) {
  AnswerCheck check;
  // Absent, not empty: an empty header is present and malformed.
  if (!answer.signature || !answer.certificate) return check;  // missing_signature
  auto header = parse_signature_header(*answer.signature);
  if (!header) {
    check.verdict = AnswerVerdict::malformed_signature;
    return check;
  }
  check.kid = header->kid;
  check.t = header->t;
  Certificate cert;
  switch (check_certificate_chain(*answer.certificate, pinned, cert)) {
    case CertificateVerdict::ok: break;
    case CertificateVerdict::wrong_app: check.verdict = AnswerVerdict::wrong_app; return check;
    default: check.verdict = AnswerVerdict::bad_certificate; return check;
  }
  check.not_after = cert.not_after;
  check.not_before = cert.not_before;
  if (cert.kid != header->kid) {
    check.verdict = AnswerVerdict::kid_mismatch;
    return check;
  }
  if (retired.count(header->kid)) {
    check.verdict = AnswerVerdict::key_retired;
    return check;
  }
  if (!certificate_covers(cert, header->t)) {
    check.verdict = AnswerVerdict::key_expired;
    return check;
  }
  const std::string input =
      join_lines({"tollgate/response/v1", header->kid, std::to_string(header->t), request.nonce, pinned.app_id,
                  std::to_string(answer.status), request.method + " " + request.target, sha256_hex(request.body),
                  credentials_sha256(request.headers), answer.response_line});
  check.verdict = ed25519_verify(cert.public_key_bytes, header->sig, to_bytes(input)) ? AnswerVerdict::ok
                                                                                      : AnswerVerdict::bad_signature;
  return check;
}

std::vector<std::string> live_entitlements(const LeasePayload& payload, std::int64_t now) {
  std::vector<std::string> codes;
  for (const auto& e : payload.entitlements)
    if (!e.until || now < *e.until) codes.push_back(e.code);
  std::sort(codes.begin(), codes.end());
  return codes;
}

std::optional<LeasePayload> parse_lease_payload(const std::string& file) {
  auto lease = parse_lease(file);
  if (!lease) return std::nullopt;
  return lease->payload;
}

LeaseCheck check_lease(const std::string& file, const LeaseCheckInput& input) {
  LeaseCheck check;
  auto lease = parse_lease(file);
  if (!lease) return check;  // malformed
  check.kid = lease->kid;
  Certificate cert;
  switch (check_certificate_chain(lease->cert, input.pinned, cert)) {
    case CertificateVerdict::ok: break;
    case CertificateVerdict::wrong_app: check.verdict = LeaseVerdict::wrong_app; return check;
    default: check.verdict = LeaseVerdict::bad_certificate; return check;
  }
  const LeasePayload& p = lease->payload;
  if (p.app_id != input.pinned.app_id) {
    check.verdict = LeaseVerdict::wrong_app;
    return check;
  }
  if (cert.kid != lease->kid) {
    check.verdict = LeaseVerdict::bad_signature;
    return check;
  }
  if (input.retired.count(lease->kid)) {
    check.verdict = LeaseVerdict::key_retired;
    return check;
  }
  // A lease never outlives its key, so a leaked private key of an ended key cannot mint a long one.
  if (!certificate_covers(cert, p.iat) || p.exp > cert.not_after) {
    check.verdict = LeaseVerdict::key_expired;
    return check;
  }
  Bytes signed_bytes = to_bytes("tollgate/lease/v1\n");
  signed_bytes.insert(signed_bytes.end(), lease->payload_bytes.begin(), lease->payload_bytes.end());
  if (!ed25519_verify(cert.public_key_bytes, lease->sig, signed_bytes)) {
    check.verdict = LeaseVerdict::bad_signature;
    return check;
  }
  // As for answers: a key that ended before the server time we have verified is expired, whatever iat it signs.
  if (cert.not_after < input.state.max_server_time - ROLLBACK_TOLERANCE_MS) {
    check.verdict = LeaseVerdict::key_expired;
    return check;
  }
  check.payload = p;
  check.verdict = verdict_of_payload(p, input);
  check.renew_due = check.verdict == LeaseVerdict::ok && input.now >= p.renew_after;
  return check;
}

}  // namespace tollgate
