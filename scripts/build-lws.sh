#!/usr/bin/env bash
# Builds LeaderWorkerSet's controller manager (sigs.k8s.io/lws, `cmd/`, the binary its image runs)
# at the version the deployments suite installs the CRD of (llm-d's wide-EP guide's, v0.9.0) from
# the Go module proxy into ~/.cache/ironlens/lws/<version>/lws-controller. The deployments suite
# runs it out of cluster against the kube-harness (packages/clusters/src/testing/lws.controller.ts).
# `go install sigs.k8s.io/lws/cmd@v0.9.0` is refused (the proxy answers 403 to the module's version
# list, which `go install` reads for deprecations), so the module is downloaded (`go mod download`,
# checked against sum.golang.org) and built from its own go.mod and go.sum.
# About 3 minutes of CPU on 2 cores with an empty Go build cache (docs/testing.md).
# Idempotent: nothing to do when the binary answers its version.
set -euo pipefail
LWS_VERSION="${LWS_VERSION:-v0.9.0}"
dest="${IRONLENS_CACHE:-$HOME/.cache/ironlens}/lws/$LWS_VERSION"
# (Its output read whole first: `grep -q` leaving early would fail the pipeline under pipefail.)
if [ -x "$dest/lws-controller" ] && [[ "$("$dest/lws-controller" --version 2>/dev/null)" == *"Version: $LWS_VERSION"$'\n'* ]]; then
  echo "[build-lws] $dest/lws-controller is $LWS_VERSION"; exit 0
fi
command -v go >/dev/null || { echo "[build-lws] needs Go (>= the module's go line)" >&2; exit 1; }
mkdir -p "$dest"
src="$(go mod download -json "sigs.k8s.io/lws@$LWS_VERSION" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')"
[ -n "$src" ] && [ -f "$src/cmd/main.go" ] || { echo "[build-lws] sigs.k8s.io/lws@$LWS_VERSION was not downloaded" >&2; exit 1; }
echo "[build-lws] building sigs.k8s.io/lws/cmd@$LWS_VERSION (a few minutes)"
# The version its --version prints comes from pkg/version, set by -ldflags as its Makefile does.
(cd "$src" && GOFLAGS=-mod=readonly CGO_ENABLED=0 go build -trimpath -o "$dest/lws-controller.tmp" \
  -ldflags "-s -w -X sigs.k8s.io/lws/pkg/version.GitVersion=$LWS_VERSION" ./cmd)
mv "$dest/lws-controller.tmp" "$dest/lws-controller"
"$dest/lws-controller" --version
