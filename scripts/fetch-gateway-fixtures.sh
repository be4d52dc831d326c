#!/usr/bin/env bash
# Fills ~/.cache/ironlens/upstream/<module>@<version>/ with the upstream sources the gateway
# suite takes its REAL fixtures from: the Gateway API and Inference Extension CRDs, Envoy
# Gateway's chart and CRDs, the Envoy AI Gateway's charts, llm-d's payload-processor chart, Istio's
# CRDs (istio.io/api, `kubernetes/customresourcedefinitions.gen.yaml`, at the profile's istio), and
# LeaderWorkerSet's CRD (sigs.k8s.io/lws, the version llm-d's wide-EP guide recommends) for the deployments suite.
# Each comes from the Go module proxy (`go mod download`); a module the proxy does not serve is
# copied from packages/clusters/test/fixtures/upstream (the charts the suite uses, kept in the
# repository), else cloned at its tag (or pinned commit) from IRONLENS_UPSTREAM_GIT.
# Idempotent: a directory already there is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
dest="${IRONLENS_CACHE:-$HOME/.cache/ironlens}/upstream"
git_base="${IRONLENS_UPSTREAM_GIT:-https://github.com}"
mkdir -p "$dest"

# module version github-repo git-ref
while read -r module version repo ref; do
  [ -z "$module" ] && continue
  out="$dest/${module//\//+}@$version"
  if [ -d "$out" ]; then echo "[gateway-fixtures] $module@$version: kept"; continue; fi
  tmp="$out.partial"; rm -rf "$tmp"
  if dir="$(go mod download -json "$module@$version" 2>/dev/null | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')" && [ -n "$dir" ] && [ -d "$dir" ]; then
    cp -r "$dir" "$tmp" && chmod -R u+w "$tmp"
    echo "[gateway-fixtures] $module@$version: from the Go module proxy"
  elif [ -d "packages/clusters/test/fixtures/upstream/${module//\//+}@$version" ]; then
    # Not on the module proxy: the parts the suite uses are kept in the repository.
    cp -r "packages/clusters/test/fixtures/upstream/${module//\//+}@$version" "$tmp"
    echo "[gateway-fixtures] $module@$version: from packages/clusters/test/fixtures/upstream (not on the module proxy)"
  else
    git clone --quiet "$git_base/$repo" "$tmp.git" --bare
    mkdir -p "$tmp" && git --git-dir="$tmp.git" archive "$ref" | tar -x -C "$tmp" && rm -rf "$tmp.git"
    echo "[gateway-fixtures] $module@$version: $repo at $ref (not on the module proxy)"
  fi
  mv "$tmp" "$out"
done <<'LIST'
sigs.k8s.io/gateway-api v1.5.1 kubernetes-sigs/gateway-api v1.5.1
sigs.k8s.io/gateway-api-inference-extension v1.5.0 kubernetes-sigs/gateway-api-inference-extension v1.5.0
github.com/envoyproxy/gateway v1.8.1 envoyproxy/gateway v1.8.1
github.com/envoyproxy/ai-gateway v0.7.0 envoyproxy/ai-gateway v0.7.0
github.com/llm-d/llm-d-inference-payload-processor v0.1.0 llm-d/llm-d-inference-payload-processor a3af1b069101df6ccee3686c69886e11150ab81e
istio.io/api v1.29.4 istio/api 1.29.4
sigs.k8s.io/lws v0.9.0 kubernetes-sigs/lws v0.9.0
LIST
