#!/usr/bin/env bash
# kustomize.sh: provide kustomize alone, for Argo CD's repo-server in the end-to-end test of
# chart patches in Argo mode (test/e2e TestE2EArgoClusterAPI, `make e2e-argocd-capi`): the
# clusters' Applications with patches are kustomize sources that inflate the chart
# (kustomize.buildOptions: --enable-helm), and the repo-server runs `kustomize` from PATH,
# as Argo CD's image has it. Built with the go command from the Go module proxy, no
# prebuilt binary; cached under ${XDG_CACHE_HOME:-$HOME/.cache}/magnum-gitops/kustomize/<version>/
# and that directory printed on the last line (KUSTOMIZE_BIN). v5.8.2 is the newest the proxy
# serves whole (Argo CD v3.6.1 ships v5.8.3; hack/ksops.sh says why); hack/ksops.sh takes its
# kustomize from here.
set -euo pipefail

KUSTOMIZE_VERSION="${KUSTOMIZE_VERSION:-v5.8.2}"
KUSTOMIZE_GO="${KUSTOMIZE_GO:-local}"

cache="${XDG_CACHE_HOME:-$HOME/.cache}/magnum-gitops/kustomize/$KUSTOMIZE_VERSION"

HACK_NAME=kustomize
# shellcheck source=hack/lib.sh
. "$(dirname "$0")/lib.sh"

lock_cache "$cache"

# kustomize_version: what the binary says it is, e.g. v5.8.2.
kustomize_version() {
  "$1" version 2>/dev/null | sed -n 's/^{*[[:space:]]*\(v[0-9][^[:space:]]*\).*/\1/p' | head -1
}

build() {
  [ -x "$cache/kustomize" ] && [ "$(kustomize_version "$cache/kustomize")" = "$KUSTOMIZE_VERSION" ] && return 0
  local gobin start
  gobin=$(mktemp -d)
  start=$SECONDS
  log "building kustomize $KUSTOMIZE_VERSION with GOTOOLCHAIN=$KUSTOMIZE_GO (first run: a few minutes on 2 cores)"
  (
    cd "$gobin"
    GOTOOLCHAIN="$KUSTOMIZE_GO" GOBIN="$gobin" GOFLAGS= CGO_ENABLED=0 nice -n 19 \
      go install -trimpath -ldflags="-s -w" "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"
  ) || { rm -rf "$gobin"; die "building kustomize $KUSTOMIZE_VERSION failed"; }
  mv "$gobin/kustomize" "$cache/kustomize"
  rm -rf "$gobin"
  log "built kustomize $KUSTOMIZE_VERSION in $((SECONDS - start))s"
}

build
got=$(kustomize_version "$cache/kustomize")
[ "$got" = "$KUSTOMIZE_VERSION" ] || die "$cache/kustomize says it is '$got', want $KUSTOMIZE_VERSION"
echo "$cache"
