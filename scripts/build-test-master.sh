#!/usr/bin/env bash
# The master image the tests boot (issue 24): `ironlens master build --os debian-12` with the
# test's own login key, into ~/.cache/ironlens/master/test/disks/_tpl_debian_12.img. Called by
# scripts/test-all.sh before vitest. The root filesystem is cached by its inputs
# (~/.cache/ironlens/master/rootfs/): the first run downloads ~150 MB of .debs and takes minutes,
# every later run only assembles the disk (seconds). The image test
# (packages/agent/src/master/master.image.test.ts) and the end-to-end test
# (packages/metal/test/diskless.e2e.test.ts) and the rollout end-to-end test (rollout.e2e.test.ts) build from the same cache.
set -euo pipefail
cd "$(dirname "$0")/.."
T=${IRONLENS_MASTER_CACHE:-$HOME/.cache/ironlens/master}/test
mkdir -p "$T/disks"
chmod 700 "$T"
[ -f "$T/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C ironlens-test-master -f "$T/id_ed25519"
t0=$(date +%s)
IRONLENS_FROM_SOURCE=1 node packages/cli/bin/ironlens.mjs master build --os debian-12 --disk-dir "$T/disks" \
  --authorized-key "$T/id_ed25519.pub" >"$T/build.json"
echo "[build-test-master] $T/disks/_tpl_debian_12.img in $(( $(date +%s) - t0 )) s: $(cat "$T/build.json")"
