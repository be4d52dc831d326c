#!/usr/bin/env bash
# Says up front whether the Kubernetes harness can be built: its binaries (etcd, kube-apiserver, …)
# are built once from the Go module proxy and cached (~/.cache/ironlens/kube; a cold build takes
# ~12 minutes), which needs Go >= 1.26 on PATH and a reachable GOPROXY. Nothing is needed when
# the binaries are cached already. Exit 1, with the reason, when the build is needed and cannot run.
set -euo pipefail
cd "$(dirname "$0")/.."
status=$(node --import tsx packages/kube-harness/src/cli.ts status)
if ! grep -q '^binaries: not built' <<<"$status"; then
  echo "[harness-prereqs] $(head -1 <<<"$status"): no Go needed"
  exit 0
fi
need_go=$(node --import tsx -e "import('./packages/kube-harness/src/versions.config.ts').then((m) => console.log(m.MIN_GO_VERSION))")
if ! command -v go >/dev/null 2>&1; then
  echo "[harness-prereqs] the Kubernetes harness must be built and needs Go >= $need_go on PATH (https://go.dev/dl/); none found" >&2
  exit 1
fi
have_go=$(go env GOVERSION | sed 's/^go//')
if [ "$(printf '%s\n%s\n' "$need_go" "$have_go" | sort -V | head -1)" != "$need_go" ]; then
  echo "[harness-prereqs] the Kubernetes harness needs Go >= $need_go; found go $have_go ($(command -v go))" >&2
  exit 1
fi
proxy=$(go env GOPROXY | cut -d, -f1 | cut -d'|' -f1)
if [ "$proxy" = off ] || [ "$proxy" = direct ]; then
  echo "[harness-prereqs] the Kubernetes harness is built from the Go module proxy; GOPROXY is '$(go env GOPROXY)'" >&2
  exit 1
fi
if ! curl -fsS -o /dev/null --max-time 20 "$proxy/go.etcd.io/etcd/server/v3/@v/list"; then
  echo "[harness-prereqs] the Go module proxy $proxy does not answer (needed once, to build the Kubernetes harness)" >&2
  exit 1
fi
echo "[harness-prereqs] the harness will be built: go $have_go and $proxy are there"

