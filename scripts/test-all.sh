#!/usr/bin/env bash
# The whole test suite from a fresh Debian machine: installs the real tools the tests drive and
# the npm packages (scripts/install-test-deps.sh; `npm ci` only when package-lock.json changed),
# builds the console and the compiled command, runs the linter, the type checker and every test
# (unit, route, the integration suites against the real tools, Chromium, qemu iPXE end to end,
# the Kubernetes harness). Exit code is the suite's.
set -euo pipefail
cd "$(dirname "$0")/.."
T0=$(date +%s)
bash scripts/install-test-deps.sh

# The Kubernetes harness needs Go >= 1.26 and the Go module proxy to be built once: checked
# here, before anything long runs.
bash scripts/check-harness-prereqs.sh

npm run check
node --import tsx packages/kube-harness/src/cli.ts build
# The Debian master image the image test and the diskless end-to-end test boot: cached by its
# inputs (minutes the first time, seconds after).
bash scripts/build-test-master.sh
# vitest under a watchdog: a test file stuck where no vitest timeout reaches (900 s, where none
# takes over about 3 minutes) is printed with the processes under it and stopped, not waited on
# silently until CI's limit (scripts/run-vitest.sh, docs/testing.md).
export IRONLENS_VITEST_SUMMARY="$(mktemp "${TMPDIR:-/tmp}/ironlens-test-all-XXXXXX")"
trap 'rm -f "$IRONLENS_VITEST_SUMMARY"' EXIT
bash scripts/run-vitest.sh "$@"
# The unit and route suites again on Node 24 (the newest runtime ironlens supports; docs/testing.md).
if [ "$#" -eq 0 ]; then bash scripts/test-node24.sh; fi
if [ -s "$IRONLENS_VITEST_SUMMARY" ]; then cat "$IRONLENS_VITEST_SUMMARY"; fi
echo "[test-all] finished in $(( $(date +%s) - T0 )) s"
