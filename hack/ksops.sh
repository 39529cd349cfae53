#!/usr/bin/env bash
# ksops.sh: provide KSOPS (github.com/viaduct-ai/kustomize-sops) and kustomize for checking
# that Argo CD users can decrypt the SOPS files magnum-gitops writes (issue 48, Argo CD mode;
# internal/sopsenc/ksops_test.go), without downloading a prebuilt binary. Both are built with
# the go command and cached under ${XDG_CACHE_HOME:-$HOME/.cache}/magnum-gitops/ksops/<KSOPS
# version>/ as `ksops` and `kustomize`; the script prints that directory on its last line
# (KSOPS_BIN). Put it first on PATH: the ksops generator names its binary as `path: ksops`.
#
# kustomize v5.8.2 is the newest release the proxy serves whole: v5.8.3 (what Argo CD v3.6.1
# ships, its hack/tool-versions.sh) requires k8s.io/kube-openapi@v0.0.0-20261001230523-
# 97fa35140926, which the proxy refuses (403). v5.8.2 asks for Go 1.26.0, so it is built with
# the project's Go; its go.mod has no replace directives, so `go install module@version`
# builds it and stamps the version `kustomize version` prints (a stale one is rebuilt).
#
# KSOPS v4.5.1 (2026-04-13, the newest release) keeps the module path
# github.com/viaduct-ai/kustomize-sops without a /v4 suffix, so the go command cannot name
# its v4 tags: the one Go name of that release is the pseudo-version of the tagged commit,
# KSOPS_PSEUDO below. The project's module proxy refuses that module at every version (its
# version list, @latest and KSOPS_PSEUDO answer 403 "not available"), so the script takes
# KSOPS_SRC, a directory holding the source of that release (go.mod, ksops.go), when given,
# and otherwise tries the proxy and stops with this reason. Its dependencies (the sops
# library, kustomize/api, ...) do come from the proxy. KSOPS decrypts in-process with the
# sops library (github.com/getsops/sops/v3/decrypt), so the sops CLI is not needed.
set -euo pipefail

KSOPS_VERSION="${KSOPS_VERSION:-v4.5.1}"
# The pseudo-version of the commit tagged v4.5.1 (d9442dc3153d, committed 2026-04-13 05:14:36 UTC).
KSOPS_PSEUDO="${KSOPS_PSEUDO:-v0.0.0-20260413051436-d9442dc3153d}"
KSOPS_GO="${KSOPS_GO:-local}"
KSOPS_SRC="${KSOPS_SRC:-}"
KUSTOMIZE_VERSION="${KUSTOMIZE_VERSION:-v5.8.2}"
KUSTOMIZE_GO="${KUSTOMIZE_GO:-local}"

ksops_module=github.com/viaduct-ai/kustomize-sops
cache="${XDG_CACHE_HOME:-$HOME/.cache}/magnum-gitops/ksops/$KSOPS_VERSION"

HACK_NAME=ksops
# shellcheck source=hack/lib.sh
. "$(dirname "$0")/lib.sh"

lock_cache "$cache"

work=""
trap '[ -z "$work" ] || rm -rf "$work"' EXIT

# ksops_source: a directory with the KSOPS source, KSOPS_SRC or the module from the proxy.
ksops_source() {
  if [ -n "$KSOPS_SRC" ]; then
    [ -f "$KSOPS_SRC/go.mod" ] && [ -f "$KSOPS_SRC/ksops.go" ] ||
      die "KSOPS_SRC=$KSOPS_SRC holds no KSOPS source (go.mod, ksops.go)"
    grep -qx "module $ksops_module" "$KSOPS_SRC/go.mod" ||
      die "KSOPS_SRC=$KSOPS_SRC: its go.mod is not module $ksops_module"
    echo "$KSOPS_SRC"
    return 0
  fi
  local out dir
  out=$(GOTOOLCHAIN="$KSOPS_GO" go mod download -json "$ksops_module@$KSOPS_PSEUDO" 2>&1) ||
    die "the module proxy does not serve $ksops_module@$KSOPS_PSEUDO (KSOPS $KSOPS_VERSION); set KSOPS_SRC to a directory with its source: $out"
  dir=$(printf '%s\n' "$out" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
  [ -n "$dir" ] && [ -d "$dir" ] || die "go mod download $ksops_module@$KSOPS_PSEUDO: no module directory in: $out"
  echo "$dir"
}

# ksops_runs: the binary answers a KRM function call (an empty ResourceList on stdin).
ksops_runs() {
  printf 'apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n' | "$1" >/dev/null 2>&1
}

build_ksops() {
  if [ -x "$cache/ksops" ] && ksops_runs "$cache/ksops"; then
    return 0
  fi
  local src start
  src=$(ksops_source)
  work=$(mktemp -d)
  cp -r "$src"/. "$work"/
  chmod -R u+w "$work"
  start=$SECONDS
  log "building KSOPS $KSOPS_VERSION with GOTOOLCHAIN=$KSOPS_GO from $src (first run: several minutes on 2 cores)"
  (
    cd "$work"
    GOTOOLCHAIN="$KSOPS_GO" GOFLAGS=-mod=mod CGO_ENABLED=0 nice -n 19 \
      go build -trimpath -ldflags="-s -w" -o "$cache/ksops.tmp" .
  ) || { rm -f "$cache/ksops.tmp"; die "building KSOPS $KSOPS_VERSION failed"; }
  rm -rf "$work"
  work=""
  mv "$cache/ksops.tmp" "$cache/ksops"
  ksops_runs "$cache/ksops" || die "$cache/ksops does not answer a KRM function call"
  log "built KSOPS $KSOPS_VERSION in $((SECONDS - start))s"
}

# kustomize_version: what the binary says it is, e.g. v5.8.2.
kustomize_version() {
  "$1" version 2>/dev/null | sed -n 's/^{*[[:space:]]*\(v[0-9][^[:space:]]*\).*/\1/p' | head -1
}

# build_kustomize puts hack/kustomize.sh's kustomize beside ksops: the ksops generator
# names its binary by path, so the test puts this one directory first on PATH.
build_kustomize() {
  if [ -x "$cache/kustomize" ] && [ "$(kustomize_version "$cache/kustomize")" = "$KUSTOMIZE_VERSION" ]; then
    return 0
  fi
  local dir
  dir=$(KUSTOMIZE_VERSION="$KUSTOMIZE_VERSION" KUSTOMIZE_GO="$KUSTOMIZE_GO" "$(dirname "$0")/kustomize.sh" | tail -n 1) ||
    die "hack/kustomize.sh failed"
  cp "$dir/kustomize" "$cache/kustomize.tmp" && mv "$cache/kustomize.tmp" "$cache/kustomize"
}

build_kustomize
build_ksops
echo "$cache"
