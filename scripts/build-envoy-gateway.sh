#!/usr/bin/env bash
# Builds Envoy Gateway's controller (github.com/envoyproxy/gateway/cmd/envoy-gateway) at the
# stack profile's version from the Go module proxy into
# ~/.cache/ironlens/envoy-gateway/<version>/envoy-gateway, for the gateway suite, which runs the
# REAL controller outside the cluster against the kube-harness. Big: 10+ minutes on 2 cores.
# Idempotent: nothing to do when the binary answers its version.
set -euo pipefail
cd "$(dirname "$0")/.."
version="$(node -e "console.log(require('./packages/clusters/profile/llm-d-stack.json').gateway_providers.envoy_gateway)")"
dest="${IRONLENS_CACHE:-$HOME/.cache/ironlens}/envoy-gateway/$version"
if [ -x "$dest/envoy-gateway" ] && "$dest/envoy-gateway" version 2>/dev/null | grep -q .; then
  echo "[build-envoy-gateway] $dest/envoy-gateway is there"; exit 0
fi
command -v go >/dev/null || { echo "[build-envoy-gateway] needs Go (>= the module's go line)" >&2; exit 1; }
mkdir -p "$dest"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
echo "[build-envoy-gateway] building github.com/envoyproxy/gateway/cmd/envoy-gateway@$version (10+ minutes)"
GOBIN="$work" GOFLAGS=-mod=mod CGO_ENABLED=0 go install "github.com/envoyproxy/gateway/cmd/envoy-gateway@$version"
mv "$work/envoy-gateway" "$dest/envoy-gateway.tmp" && mv "$dest/envoy-gateway.tmp" "$dest/envoy-gateway"
