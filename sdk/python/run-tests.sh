#!/usr/bin/env bash
# The Python SDK's tests: the shared vectors, then the real server (built here when dist/ is missing or
# older than src/) driven through the SDK, and the example program. Says LOUDLY what is missing and
# exits 1: a machine without the dependencies must never pass silently.
#   sdk/python/run-tests.sh [extra pytest arguments]
set -u
cd "$(dirname "$0")/../.." || exit 1
PY="${TOLLGATE_SDK_PYTHON:-/usr/bin/python3}"  # override only to test this script
missing=()

if [ ! -x "$PY" ]; then
  missing+=("python3 (Debian's /usr/bin/python3): apt-get install -y python3")
else
  "$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 9) else 1)' 2>/dev/null \
    || missing+=("Python >= 3.9 at $PY (found $("$PY" --version 2>&1))")
  "$PY" -c 'from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey' 2>/dev/null \
    || missing+=("python3-cryptography with Ed25519: apt-get install -y python3-cryptography")
  "$PY" -c 'import pytest' 2>/dev/null \
    || missing+=("python3-pytest: apt-get install -y python3-pytest")
  "$PY" -c 'import ensurepip, venv' 2>/dev/null \
    || missing+=("python3-venv (the package test installs into a fresh virtualenv): apt-get install -y python3-venv")
fi
command -v node >/dev/null 2>&1 || missing+=("node (the tests run the real server): see README.md")

if [ ${#missing[@]} -gt 0 ]; then
  {
    echo
    echo "################################################################################"
    echo "##  PYTHON SDK TESTS NOT RUN: MISSING DEPENDENCIES"
    for m in "${missing[@]}"; do echo "##    - $m"; done
    echo "################################################################################"
    echo
  } >&2
  exit 1
fi

# The server the tests start: dist/cli/main.js, rebuilt when any source is newer.
if [ ! -f dist/cli/main.js ] || [ -n "$(find src -name '*.ts' -newer dist/cli/main.js -print -quit)" ]; then
  echo "sdk/python: building the server (npm run build)" >&2
  built=no
  for attempt in 1 2 3; do  # another process may be building at the same time
    if npm run build --silent; then built=yes; break; fi
    echo "sdk/python: build attempt $attempt failed; retrying" >&2
    sleep 3
  done
  if [ "$built" != yes ] && [ ! -f dist/cli/main.js ]; then
    echo "sdk/python: THE SERVER DID NOT BUILD (npm run build): cannot run the tests" >&2
    exit 1
  fi
fi

"$PY" -m pytest -q -p no:cacheprovider sdk/python/tests "$@"
rc=$?
if [ $rc -eq 5 ]; then
  echo "sdk/python: PYTEST COLLECTED NO TESTS: that is a failure" >&2
  exit 1
fi
exit $rc
