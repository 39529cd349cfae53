#!/usr/bin/env bash
# flux.sh: provide Flux's source-, kustomize- and helm-controller for the end-to-end tests
# (test/e2e) without downloading prebuilt binaries. Each controller is built from its own
# module on the Go module proxy (its replace directives kept; its ./api module, absent from
# the module zip, taken from the proxy at the same version) and cached with its CRDs under
# ${XDG_CACHE_HOME:-$HOME/.cache}/magnum-gitops/flux/:
#   <controller>-<version>      the binary
#   crds/<controller>-<version>/*.yaml
# Prints that directory on its last line (FLUX_BIN for the e2e tests).
set -euo pipefail
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"

SOURCE_CONTROLLER_VERSION="${SOURCE_CONTROLLER_VERSION:-v1.9.6}"
KUSTOMIZE_CONTROLLER_VERSION="${KUSTOMIZE_CONTROLLER_VERSION:-v1.9.5}"
HELM_CONTROLLER_VERSION="${HELM_CONTROLLER_VERSION:-v1.6.4}"
K8S_VERSION="${K8S_VERSION:-1.37.0}"

cache="${XDG_CACHE_HOME:-$HOME/.cache}/magnum-gitops/flux"
mkdir -p "$cache/crds"

log() { echo "flux: $*" >&2; }
# Every failure exits non-zero with a reason: under CI (CI=true) `make e2e` must fail, never
# skip, when a controller cannot be provided.
die() {
  log "ERROR: $*"
  exit 1
}

command -v go >/dev/null || die "go is not on PATH"

# Module directory in the module cache (downloaded through the proxy if needed).
module_dir() {
  local out dir
  out=$(go mod download -json "$1@$2") || die "go mod download $1@$2 failed: $out"
  dir=$(printf '%s\n' "$out" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
  [ -n "$dir" ] && [ -d "$dir" ] || die "go mod download $1@$2: no module directory in: $out"
  echo "$dir"
}

# kube-apiserver from hack/testbin.sh may be building at the same time; on 2 cores the two
# builds would only slow each other down. Wait (bounded) for it before building.
wait_for_testbin() {
  local apiserver="${XDG_CACHE_HOME:-$HOME/.cache}/magnum-gitops/testbin/${K8S_VERSION}/kube-apiserver"
  local waited=0 limit="${FLUX_WAIT_TESTBIN_SECONDS:-1800}"
  [ -e "$apiserver" ] && return 0
  # Only wait when a testbin build is running; otherwise there is nothing to wait for.
  pgrep -f 'magnum-gitops.local/tools/kube-apiserver|k8s.io/kubernetes/cmd/kube-apiserver' >/dev/null 2>&1 || return 0
  log "kube-apiserver is being built (hack/testbin.sh); waiting for it before building the controllers"
  while [ ! -e "$apiserver" ]; do
    [ "$waited" -ge "$limit" ] && die "kube-apiserver still not built after ${limit}s"
    sleep 30
    waited=$((waited + 30))
  done
}

# build NAME VERSION [go.mod edit args...]
build() {
  local name="$1" version="$2"
  shift 2
  local module="github.com/fluxcd/$name"
  local bin="$cache/$name-$version"
  local crds="$cache/crds/$name-$version"
  local dir
  if [ ! -d "$crds" ] || [ -z "$(ls -A "$crds" 2>/dev/null)" ]; then
    dir=$(module_dir "$module" "$version")
    mkdir -p "$crds.tmp"
    cp "$dir"/config/crd/bases/*.yaml "$crds.tmp"/ || die "$module@$version has no config/crd/bases"
    chmod -R u+w "$crds.tmp"
    rm -rf "$crds"
    mv "$crds.tmp" "$crds"
  fi
  if [ -x "$bin" ]; then
    return 0
  fi
  wait_for_testbin
  dir=$(module_dir "$module" "$version")
  local work
  work=$(mktemp -d)
  cp -r "$dir"/. "$work"/
  chmod -R u+w "$work"
  local start=$SECONDS
  log "building $name $version (first run: several minutes on 2 cores)"
  (
    cd "$work"
    go mod edit -dropreplace "$module/api"
    for edit in "$@"; do
      go mod edit "$edit"
    done
    # -e: the proxy refuses (403) some test-only modules; the build list does not need them.
    GOFLAGS=-mod=mod go mod tidy -e >"$work/tidy.log" 2>&1 || { cat "$work/tidy.log" >&2; exit 1; }
    CGO_ENABLED=0 GOFLAGS=-mod=mod nice -n 10 go build -trimpath -ldflags='-s -w' -o "$bin.tmp" .
  ) || { rm -rf "$work"; rm -f "$bin.tmp"; die "building $name $version failed"; }
  rm -rf "$work"
  mv "$bin.tmp" "$bin"
  log "built $name $version in $((SECONDS - start))s"
}

build source-controller "$SOURCE_CONTROLLER_VERSION" \
  -replace=github.com/fluxcd/pkg/artifact=github.com/fluxcd/pkg/artifact@v0.18.1
build kustomize-controller "$KUSTOMIZE_CONTROLLER_VERSION"
build helm-controller "$HELM_CONTROLLER_VERSION"

for c in "source-controller-$SOURCE_CONTROLLER_VERSION" "kustomize-controller-$KUSTOMIZE_CONTROLLER_VERSION" \
  "helm-controller-$HELM_CONTROLLER_VERSION"; do
  [ -x "$cache/$c" ] || die "$cache/$c is missing after the build"
  log "$c: $cache/$c"
done
# Every kind the e2e harness and deploy/flux use must have its CRD: a module whose layout
# moved would otherwise surface as a skipped or confusing test much later.
for kind in GitRepository HelmRepository HelmChart Kustomization HelmRelease; do
  grep -rqE "^[[:space:]]+kind: $kind\$" "$cache/crds" || die "no CRD for $kind under $cache/crds"
done
[ "$SECONDS" -gt 5 ] && log "ready after ${SECONDS}s"
echo "$cache"
