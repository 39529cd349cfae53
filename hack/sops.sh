#!/usr/bin/env bash
# sops.sh: provide the sops CLI (github.com/getsops/sops/v3) for the Argo CD end-to-end tests
# (issue 48): the config-management plugin of deploy/argocd/sops-plugin.yaml decrypts the
# SOPS files magnum-gitops writes by running `sops --decrypt`, and internal/testenv/argocd
# runs that plugin under the real argocd-cmp-server. KSOPS would decrypt in-process, but the
# project's module proxy refuses its module (hack/ksops.sh); the sops CLI it serves.
#
# Built without downloading a prebuilt binary: `go install module/cmd/sops@version` from the
# Go module proxy (sops's go.mod has no replace directive and asks for Go 1.25.8, so the
# project's Go builds it), cached under
# ${XDG_CACHE_HOME:-$HOME/.cache}/magnum-gitops/sops/<version>/sops and reused while it
# says it is that version (`sops --version --disable-version-check`: without that flag sops
# asks GitHub for its newest release, which cannot be reached here). Prints the directory on
# its last line (SOPS_BIN); put it on the plugin's PATH.
#
# SOPS_VERSION picks another release: v3.13.3 is what the proxy serves newest (2026-11-28);
# v3.13.2 and v3.12.2 are served too, should it ever refuse v3.13.3.
set -euo pipefail

SOPS_VERSION="${SOPS_VERSION:-v3.13.3}"
SOPS_GO="${SOPS_GO:-local}"

sops_module=github.com/getsops/sops/v3
cache="${XDG_CACHE_HOME:-$HOME/.cache}/magnum-gitops/sops/$SOPS_VERSION"

HACK_NAME=sops
# shellcheck source=hack/lib.sh
. "$(dirname "$0")/lib.sh"

case "$SOPS_VERSION" in
v3.*) ;;
*) die "SOPS_VERSION=$SOPS_VERSION: want a v3 release tag such as v3.13.3 (the module is $sops_module)" ;;
esac
lock_cache "$cache"

gobin=""
trap '[ -z "$gobin" ] || rm -rf "$gobin"' EXIT

# sops_version: what the binary says it is, e.g. 3.13.3 (no leading v), without asking
# GitHub for the newest release.
sops_version() {
  "$1" --version --disable-version-check 2>/dev/null | sed -n 's/^sops \([0-9][^[:space:]]*\).*/\1/p' | head -1
}

build_sops() {
  if [ -x "$cache/sops" ] && [ "$(sops_version "$cache/sops")" = "${SOPS_VERSION#v}" ]; then
    return 0
  fi
  local start out
  gobin=$(mktemp -d)
  start=$SECONDS
  log "building sops $SOPS_VERSION with GOTOOLCHAIN=$SOPS_GO from the Go module proxy (first run: a few minutes on 2 cores)"
  # The module proxy's answer (403 "not available", unknown revision) is the reason to show.
  if ! out=$(
    cd "$gobin" &&
      GOTOOLCHAIN="$SOPS_GO" GOBIN="$gobin" GOFLAGS= CGO_ENABLED=0 nice -n 19 \
        go install -trimpath -ldflags="-s -w" "$sops_module/cmd/sops@$SOPS_VERSION" 2>&1
  ); then
    die "go install $sops_module/cmd/sops@$SOPS_VERSION failed (is that version served by the module proxy? SOPS_VERSION picks another): $out"
  fi
  mv "$gobin/sops" "$cache/sops.tmp"
  mv "$cache/sops.tmp" "$cache/sops"
  local got
  got=$(sops_version "$cache/sops")
  [ "$got" = "${SOPS_VERSION#v}" ] || die "$cache/sops says it is '$got', want ${SOPS_VERSION#v}"
  log "built sops $SOPS_VERSION in $((SECONDS - start))s"
}

build_sops
echo "$cache"
