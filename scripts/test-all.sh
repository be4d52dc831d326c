#!/usr/bin/env bash
# The whole test suite from a fresh Debian machine: installs the real tools the tests
# drive and the npm packages, builds the console, runs the linter, the type checker and
# every test (unit, route, real dnsmasq/tgtd/sshd, Chromium, qemu iPXE end to end, the
# Kubernetes harness). The console is built by `npm ci` (the root `prepare` script). Exit code is the suite's.
set -euo pipefail
cd "$(dirname "$0")/.."
T0=$(date +%s)
bash scripts/install-test-deps.sh
npm run check
# The Kubernetes harness's binaries (etcd, kube-apiserver, …) are built from the Go module
# proxy once and cached; a cold build takes ~12 minutes and gets its own log here.
node --import tsx packages/kube-harness/src/cli.ts build
npx vitest run "$@"
echo "[test-all] finished in $(( $(date +%s) - T0 )) s"
