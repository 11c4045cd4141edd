#!/usr/bin/env bash
# The C++ SDK's tests: checks the toolchain and libraries (and says LOUDLY what is missing, exit 1),
# builds the server if dist/ is missing or older than src/, configures and builds in a build dir,
# and runs ctest (the shared vectors, the real server, the example, the installed package).
#   sdk/cpp/run-tests.sh            build dir: $TOLLGATE_CPP_BUILD or a temp dir (removed afterwards)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"

missing=()
command -v cmake >/dev/null 2>&1 || missing+=("cmake (>= 3.16): apt-get install cmake")
cxx="${CXX:-}"
if [ -z "$cxx" ]; then
  for c in c++ g++ clang++; do command -v "$c" >/dev/null 2>&1 && { cxx="$c"; break; }; done
fi
if [ -z "$cxx" ]; then
  missing+=("a C++17 compiler: apt-get install g++")
elif ! echo 'int main() { if constexpr (true) return 0; }' | "$cxx" -std=c++17 -x c++ - -o /dev/null >/dev/null 2>&1; then
  missing+=("a C++17 compiler ($cxx does not compile C++17): apt-get install g++")
fi
has_header() { [ -n "$cxx" ] && echo "#include <$1>
int main() { return 0; }" | "$cxx" -std=c++17 -x c++ - -fsyntax-only >/dev/null 2>&1; }
has_pc() { command -v pkg-config >/dev/null 2>&1 && pkg-config --exists "$1"; }
{ has_pc libcurl || has_header curl/curl.h; } || missing+=("libcurl (headers): apt-get install libcurl4-openssl-dev")
{ has_pc libsodium || has_header sodium.h; } || missing+=("libsodium (headers): apt-get install libsodium-dev")
{ has_pc nlohmann_json || has_header nlohmann/json.hpp; } || missing+=("nlohmann/json: apt-get install nlohmann-json3-dev")
command -v node >/dev/null 2>&1 || missing+=("node (Node.js >= 20): runs the Tollgate server the tests use")
command -v npm >/dev/null 2>&1 || missing+=("npm: builds the Tollgate server (npm run build)")

if [ ${#missing[@]} -gt 0 ]; then
  {
    echo
    echo "************************************************************************"
    echo "*** The C++ SDK tests CANNOT RUN: missing dependencies               ***"
    for m in "${missing[@]}"; do echo "***   - $m"; done
    echo "************************************************************************"
    echo
  } >&2
  exit 1
fi

# The server the tests start: dist/ built when missing or older than a file in src/.
if [ ! -f "$root/dist/cli/main.js" ] || [ -n "$(find "$root/src" -newer "$root/dist/cli/main.js" -print -quit)" ]; then
  echo "building the server (npm run build)"
  [ -d "$root/node_modules" ] || (cd "$root" && npm ci)
  (cd "$root" && npm run build) || { sleep 5; (cd "$root" && npm run build); }  # another build may run at the same time
fi

build="${TOLLGATE_CPP_BUILD:-}"
if [ -z "$build" ]; then
  build="$(mktemp -d "${TMPDIR:-/tmp}/tollgate-cpp-build.XXXXXX")"
  trap 'rm -rf "$build"' EXIT
fi
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$(command -v "$cxx")"
cmake --build "$build" -j2
cd "$build"
ctest --output-on-failure
