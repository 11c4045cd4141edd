// Floating seats (issue 25): the background heartbeat of a checked-out seat (not installed; tests include it).
// It beats at a third of the interval the server gave (heartbeat_seconds, or a third of the time left when that
// is shorter), retries a failed beat before the seat expires, and reports the seat lost on a verified 404
// seat_not_found, a verified 409, or when the expiry passes with no beat through. Time left is measured on the
// monotonic clock from when the answer's request was sent, so a wrong or changed wall clock neither loses nor
// keeps a seat.
#pragma once

#include <condition_variable>
#include <mutex>
#include <thread>

#include "tollgate/tollgate.hpp"

namespace tollgate::detail {

/** The share of heartbeat_seconds between beats: three per interval, so two may fail before the seat is at risk. */
constexpr double HEARTBEAT_FRACTION = 1.0 / 3.0;

/** Unix ms of an ISO-8601 UTC time as the server writes it (2026-01-01T01:00:00.000Z); throws Error if it is not one. */
std::int64_t iso_ms(const std::string& iso);

/** "seat_not_found" or "conflict" when a heartbeat's error says the seat is gone (a verified 404 seat_not_found, any verified 409); else empty. */
std::string lost_reason_of(std::exception_ptr err);

class Heartbeat {
 public:
  /** One beat: the seat answered and the monotonic time its request was sent; throws on failure. */
  using Beat = std::function<std::pair<Seat, std::int64_t>()>;
  /** Sleeps `ms` or until stop(); the default waits on a condition variable. Tests pass a fake clock's. */
  using Wait = std::function<void(std::int64_t ms)>;

  Heartbeat(Seat first, std::int64_t sent_at, Beat beat, std::function<std::int64_t()> monotonic,
            std::function<void(const SeatLoss&)> on_lost, Wait wait = {});
  /** Stops and joins the thread. */
  ~Heartbeat();
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  /** Stops beating (returns at once; the thread ends after an in-flight beat). */
  void stop();
  bool running() const;
  Seat seat() const;
  std::int64_t interval_ms() const;

 private:
  void run();
  void renew(const Seat& seat, std::int64_t sent_at);
  void lose(const std::string& reason, std::exception_ptr cause);
  Beat beat_;
  std::function<std::int64_t()> monotonic_;
  std::function<void(const SeatLoss&)> on_lost_;
  Wait wait_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool stopped_ = false;
  Seat seat_;
  std::int64_t deadline_ = 0;
  std::int64_t interval_ = 0;
  std::exception_ptr last_error_;
  std::thread thread_;
};

}  // namespace tollgate::detail
