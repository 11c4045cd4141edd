// The seat heartbeat (heartbeat.hpp).
#include "heartbeat.hpp"

#include <algorithm>
#include <cstdio>

namespace tollgate::detail {

namespace {
/** Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm): no timegm, no locale. */
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}
}  // namespace

std::int64_t iso_ms(const std::string& iso) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, consumed = 0;
  double sec = 0;
  if (std::sscanf(iso.c_str(), "%4d-%2d-%2dT%2d:%2d:%lf%n", &y, &mo, &d, &h, &mi, &sec, &consumed) != 6 ||
      iso.substr(static_cast<std::size_t>(consumed)) != "Z")
    throw Error("tollgate: not an ISO-8601 UTC time: " + iso);
  const std::int64_t days = days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
  return ((days * 24 + h) * 60 + mi) * 60000 + static_cast<std::int64_t>(sec * 1000 + 0.5);
}

std::string lost_reason_of(std::exception_ptr err) {
  try {
    if (err) std::rethrow_exception(err);
  } catch (const ApiError& e) {
    if (e.status() == 404 && e.code() == "seat_not_found") return "seat_not_found";
    if (e.status() == 409) return "conflict";
  } catch (...) {
  }
  return "";
}

Heartbeat::Heartbeat(Seat first, std::int64_t sent_at, Beat beat, std::function<std::int64_t()> monotonic,
                     std::function<void(const SeatLoss&)> on_lost, Wait wait)
    : beat_(std::move(beat)), monotonic_(std::move(monotonic)), on_lost_(std::move(on_lost)), wait_(std::move(wait)) {
  renew(first, sent_at);
  thread_ = std::thread([this] { run(); });
}

Heartbeat::~Heartbeat() {
  stop();
  if (thread_.joinable()) {
    if (thread_.get_id() == std::this_thread::get_id())
      thread_.detach();  // destroyed from its own callback: the thread ends as it returns
    else
      thread_.join();
  }
}

void Heartbeat::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopped_ = true;
  }
  cv_.notify_all();
}

bool Heartbeat::running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !stopped_;
}

Seat Heartbeat::seat() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return seat_;
}

std::int64_t Heartbeat::interval_ms() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return interval_;
}

void Heartbeat::renew(const Seat& seat, std::int64_t sent_at) {
  const std::int64_t ttl = std::max<std::int64_t>(0, iso_ms(seat.expires_at) - iso_ms(seat.server_time));
  std::lock_guard<std::mutex> lock(mutex_);
  deadline_ = sent_at + ttl;
  interval_ = std::max<std::int64_t>(1, static_cast<std::int64_t>(
                                            std::min<double>(seat.heartbeat_seconds * 1000.0, static_cast<double>(ttl)) *
                                            HEARTBEAT_FRACTION));
  seat_ = seat;
  last_error_ = nullptr;
}

void Heartbeat::run() {
  std::int64_t delay = interval_ms();
  for (;;) {
    if (wait_) {
      wait_(delay);
    } else {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait_for(lock, std::chrono::milliseconds(delay), [this] { return stopped_; });
    }
    std::int64_t deadline, interval;
    std::string id;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopped_) return;
      deadline = deadline_;
      interval = interval_;
      id = seat_.id;
    }
    if (monotonic_() >= deadline) return lose("expired", last_error_);
    try {
      auto [seat, sent_at] = beat_();
      if (!running()) return;
      if (seat.id != id) return lose("seat_not_found", nullptr);
      renew(seat, sent_at);
      delay = interval_ms();
    } catch (...) {
      std::exception_ptr err = std::current_exception();
      if (!running()) return;
      const std::string reason = lost_reason_of(err);
      if (!reason.empty()) return lose(reason, err);
      last_error_ = err;
      const std::int64_t left = deadline - monotonic_();
      if (left <= 0) return lose("expired", err);
      // Again soon, and once more at the deadline at the latest (which then reports the seat expired).
      delay = std::min(left, std::max(interval / 4, left / 3));
    }
  }
}

void Heartbeat::lose(const std::string& reason, std::exception_ptr cause) {
  std::string id;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopped_ = true;
    id = seat_.id;
  }
  if (on_lost_) on_lost_(SeatLoss{reason, id, cause});
}

}  // namespace tollgate::detail
