// A small assertion helper for the SDK's tests (no external test framework).
#pragma once
#include <exception>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace check {

struct Failure : std::exception {
  std::string what_;
  explicit Failure(std::string w) : what_(std::move(w)) {}
  const char* what() const noexcept override { return what_.c_str(); }
};

inline int& failures() {
  static int n = 0;
  return n;
}
inline int& passes() {
  static int n = 0;
  return n;
}

template <typename A, typename B>
void equal(const A& actual, const B& expected, const std::string& what, const char* file, int line) {
  if (!(actual == expected)) {
    std::ostringstream s;
    s << file << ":" << line << ": " << what << ": got [" << actual << "], expected [" << expected << "]";
    throw Failure(s.str());
  }
}

inline void truth(bool ok, const std::string& what, const char* file, int line) {
  if (!ok) throw Failure(std::string(file) + ":" + std::to_string(line) + ": expected " + what);
}

/** Runs one named case; a failure or an unexpected exception is reported and counted, the run goes on. */
inline void run(const std::string& name, const std::function<void()>& body) {
  try {
    body();
    passes()++;
    std::cout << "  ok    " << name << "\n";
  } catch (const Failure& f) {
    failures()++;
    std::cout << "  FAIL  " << name << "\n        " << f.what() << "\n";
  } catch (const std::exception& e) {
    failures()++;
    std::cout << "  FAIL  " << name << "\n        unexpected exception: " << e.what() << "\n";
  }
  std::cout.flush();
}

inline int summary(const std::string& suite) {
  std::cout << suite << ": " << passes() << " passed, " << failures() << " failed\n";
  return failures() == 0 && passes() > 0 ? 0 : 1;
}

}  // namespace check

#define CHECK_EQ(actual, expected) ::check::equal((actual), (expected), #actual, __FILE__, __LINE__)
#define CHECK(cond) ::check::truth((cond), #cond, __FILE__, __LINE__)
