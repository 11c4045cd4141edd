// Bytes, base64url, hashes, Ed25519, HMAC and nonces (libsodium), JSON helpers, errors.
#include <cmath>
#include <mutex>

#include "internal.hpp"

namespace tollgate {

const char* to_string(AnswerVerdict v) {
  switch (v) {
    case AnswerVerdict::ok: return "ok";
    case AnswerVerdict::missing_signature: return "missing_signature";
    case AnswerVerdict::malformed_signature: return "malformed_signature";
    case AnswerVerdict::bad_certificate: return "bad_certificate";
    case AnswerVerdict::wrong_app: return "wrong_app";
    case AnswerVerdict::kid_mismatch: return "kid_mismatch";
    case AnswerVerdict::key_retired: return "key_retired";
    case AnswerVerdict::key_expired: return "key_expired";
    case AnswerVerdict::bad_signature: return "bad_signature";
  }
  return "unknown";
}

const char* to_string(LeaseVerdict v) {
  switch (v) {
    case LeaseVerdict::ok: return "ok";
    case LeaseVerdict::malformed: return "malformed";
    case LeaseVerdict::bad_certificate: return "bad_certificate";
    case LeaseVerdict::wrong_app: return "wrong_app";
    case LeaseVerdict::bad_signature: return "bad_signature";
    case LeaseVerdict::key_expired: return "key_expired";
    case LeaseVerdict::key_retired: return "key_retired";
    case LeaseVerdict::hardware_mismatch: return "hardware_mismatch";
    case LeaseVerdict::superseded: return "superseded";
    case LeaseVerdict::dropped: return "dropped";
    case LeaseVerdict::clock_rollback: return "clock_rollback";
    case LeaseVerdict::expired: return "expired";
    case LeaseVerdict::runtime_exhausted: return "runtime_exhausted";
    case LeaseVerdict::no_lease: return "no_lease";
  }
  return "unknown";
}

const char* to_string(CertificateVerdict v) {
  switch (v) {
    case CertificateVerdict::ok: return "ok";
    case CertificateVerdict::bad_certificate: return "bad_certificate";
    case CertificateVerdict::wrong_app: return "wrong_app";
    case CertificateVerdict::key_expired: return "key_expired";
  }
  return "unknown";
}

VerificationError::VerificationError(AnswerVerdict verdict, std::optional<int> unverified_status)
    : Error(std::string("Tollgate answer refused: ") + to_string(verdict)), verdict_(verdict), status_(unverified_status) {}

ApiError::ApiError(int status, std::string code, std::string detail, std::vector<FieldError> field_errors,
                   std::optional<std::string> ban_reason, std::optional<std::string> user_id, std::string body)
    : Error(std::to_string(status) + " " + code + ": " + detail + (ban_reason ? " (" + *ban_reason + ")" : "")),
      status_(status),
      code_(std::move(code)),
      detail_(std::move(detail)),
      field_errors_(std::move(field_errors)),
      ban_reason_(std::move(ban_reason)),
      user_id_(std::move(user_id)),
      body_(std::move(body)) {
  const auto parsed = nlohmann::json::parse(body_, nullptr, false);
  if (!parsed.is_object()) return;
  if (parsed.contains("retry_after") && parsed["retry_after"].is_number_integer()) retry_after_ = parsed["retry_after"].get<std::int64_t>();
  if (parsed.contains("last_reset_at") && parsed["last_reset_at"].is_string()) last_reset_at_ = parsed["last_reset_at"].get<std::string>();
}

LeaseError::LeaseError(LeaseVerdict verdict, LeaseTimes times, std::exception_ptr cause)
    : Error(std::string("Offline lease refused: ") + to_string(verdict)),
      verdict_(verdict),
      times_(times),
      cause_(std::move(cause)) {}

NetworkError::NetworkError(const std::string& message, std::string reason)
    : Error(message), reason_(std::move(reason)) {}

UnavailableError::UnavailableError(int status, bool verified, std::optional<std::string> code,
                                   std::optional<std::int64_t> retry_after)
    : Error("Tollgate unavailable: " + std::to_string(status) + (verified ? " " + code.value_or("") : " (unverified)")),
      status_(status),
      verified_(verified),
      code_(std::move(code)),
      retry_after_(retry_after) {}

namespace detail {

void ensure_sodium() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (sodium_init() < 0) throw Error("tollgate: libsodium failed to initialise");
  });
}

Bytes to_bytes(const std::string& text) { return Bytes(text.begin(), text.end()); }
std::string to_text(const Bytes& bytes) { return std::string(bytes.begin(), bytes.end()); }

std::string hex(const std::uint8_t* data, std::size_t size) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(size * 2);
  for (std::size_t i = 0; i < size; i++) {
    out.push_back(digits[data[i] >> 4]);
    out.push_back(digits[data[i] & 15]);
  }
  return out;
}

Bytes sha256(const Bytes& bytes) {
  ensure_sodium();
  Bytes out(crypto_hash_sha256_BYTES);
  crypto_hash_sha256(out.data(), bytes.data(), bytes.size());
  return out;
}

bool ed25519_verify(const Bytes& public_key, const Bytes& signature, const Bytes& message) {
  if (public_key.size() != crypto_sign_PUBLICKEYBYTES || signature.size() != crypto_sign_BYTES) return false;
  ensure_sodium();
  return crypto_sign_verify_detached(signature.data(), message.data(), message.size(), public_key.data()) == 0;
}

std::string hmac_sha256_hex(const Bytes& key, const std::string& message) {
  ensure_sodium();
  if (key.size() != crypto_auth_hmacsha256_KEYBYTES) throw Error("tollgate: HMAC key must be 32 bytes");
  unsigned char mac[crypto_auth_hmacsha256_BYTES];
  crypto_auth_hmacsha256(mac, reinterpret_cast<const unsigned char*>(message.data()), message.size(), key.data());
  return hex(mac, sizeof mac);
}

bool equal_constant_time(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  ensure_sodium();
  return a.empty() || sodium_memcmp(a.data(), b.data(), a.size()) == 0;
}

Sha256::Sha256() {
  ensure_sodium();
  crypto_hash_sha256_init(&state_);
}
void Sha256::update(const void* data, std::size_t size) {
  crypto_hash_sha256_update(&state_, static_cast<const unsigned char*>(data), size);
}
std::string Sha256::hex_digest() {
  unsigned char out[crypto_hash_sha256_BYTES];
  crypto_hash_sha256_final(&state_, out);
  return hex(out, sizeof out);
}

std::optional<json> decode_json_object(const std::string& text) {
  auto bytes = b64url_decode(text);
  if (!bytes) return std::nullopt;
  // nlohmann refuses invalid UTF-8 inside strings: a forged value never decodes to a valid one.
  json value = json::parse(bytes->begin(), bytes->end(), nullptr, false);
  if (value.is_discarded() || !value.is_object()) return std::nullopt;
  return value;
}

std::optional<std::int64_t> safe_integer(const json& value) {
  constexpr std::int64_t MAX_SAFE = 9007199254740991LL;
  if (value.is_number_unsigned()) {
    auto v = value.get<std::uint64_t>();
    if (v > static_cast<std::uint64_t>(MAX_SAFE)) return std::nullopt;
    return static_cast<std::int64_t>(v);
  }
  if (value.is_number_integer()) {
    auto v = value.get<std::int64_t>();
    if (v > MAX_SAFE || v < -MAX_SAFE) return std::nullopt;
    return v;
  }
  if (value.is_number_float()) {
    double d = value.get<double>();
    if (!std::isfinite(d) || std::floor(d) != d || std::fabs(d) > static_cast<double>(MAX_SAFE)) return std::nullopt;
    return static_cast<std::int64_t>(d);
  }
  return std::nullopt;
}

bool has_exact_keys(const json& object, std::initializer_list<const char*> keys) {
  if (!object.is_object() || object.size() != keys.size()) return false;
  for (const char* k : keys)
    if (!object.contains(k)) return false;
  return true;
}

}  // namespace detail

using namespace detail;

std::string sha256_hex(const Bytes& bytes) {
  auto d = sha256(bytes);
  return hex(d.data(), d.size());
}
std::string sha256_hex(const std::string& text) { return sha256_hex(to_bytes(text)); }

std::optional<Bytes> b64url_decode(const std::string& text) {
  // Strict (RFC 4648 §5, no padding), as the other SDKs: the alphabet only, and never a length of 4n+1.
  for (char c : text)
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_')) return std::nullopt;
  if (text.size() % 4 == 1) return std::nullopt;
  if (text.empty()) return Bytes{};
  ensure_sodium();
  Bytes out(text.size() * 3 / 4 + 3);
  std::size_t len = 0;
  const char* end = nullptr;
  if (sodium_base642bin(out.data(), out.size(), text.data(), text.size(), nullptr, &len, &end,
                        sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0 ||
      end != text.data() + text.size())
    return std::nullopt;
  out.resize(len);
  return out;
}

std::string b64url_encode(const Bytes& bytes) {
  ensure_sodium();
  const int variant = sodium_base64_VARIANT_URLSAFE_NO_PADDING;
  std::string out(sodium_base64_encoded_len(bytes.size(), variant), '\0');
  sodium_bin2base64(out.data(), out.size(), bytes.data(), bytes.size(), variant);
  out.resize(std::char_traits<char>::length(out.c_str()));
  return out;
}

std::string new_nonce() {
  ensure_sodium();
  Bytes bytes(24);
  randombytes_buf(bytes.data(), bytes.size());
  return b64url_encode(bytes);
}

}  // namespace tollgate
