#!/usr/bin/env bash
# Builds the pinned Helm (the chart installer the gateway job drives) from the Go module proxy
# into ~/.cache/ironlens/helm/<version>/helm. Idempotent: does nothing when that binary exists and
# answers its version. The product finds helm through IRONLENS_HELM or PATH; the tests through
# IRONLENS_HELM or this cache path.
set -euo pipefail
HELM_VERSION="${HELM_VERSION:-v3.21.4}"
dest="${IRONLENS_CACHE:-$HOME/.cache/ironlens}/helm/$HELM_VERSION"
if [ -x "$dest/helm" ] && "$dest/helm" version --short 2>/dev/null | grep -q "${HELM_VERSION}"; then
  echo "[build-helm] $dest/helm is $HELM_VERSION"; exit 0
fi
command -v go >/dev/null || { echo "[build-helm] needs Go (apt-get install golang-go, or go.dev/dl)" >&2; exit 1; }
mkdir -p "$dest"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
echo "[build-helm] building helm.sh/helm/v3/cmd/helm@$HELM_VERSION (a few minutes)"
# go install keeps the module's own go.mod and go.sum (checked against sum.golang.org); the
# version string Helm prints comes from its internal/version package, set by -ldflags as upstream does.
GOBIN="$work" GOFLAGS=-mod=mod CGO_ENABLED=0 go install \
  -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" \
  "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
mv "$work/helm" "$dest/helm.tmp" && mv "$dest/helm.tmp" "$dest/helm"
"$dest/helm" version --short
