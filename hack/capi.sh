#!/usr/bin/env bash
# capi.sh: provide the real Cluster API controllers for the end-to-end tests (test/e2e)
# without downloading prebuilt binaries: core, kubeadm bootstrap (CABPK), kubeadm control
# plane (KCP) and the development provider CAPD, whose in-memory backend fakes the workload
# clusters, all built from the Go module proxy; plus kube-controller-manager running only its
# garbage collector, which a bare kube-apiserver lacks (CAPI leaves templates and Secrets to
# it through ownerReferences).
#
# sigs.k8s.io/cluster-api/test cannot be a dependency (its go.mod points at ../ and ../api
# through replace directives, which only count in the main module), so the three module zips
# are laid out as the repository is: root at src/, api at src/api, test at src/test. Their own
# replaces then resolve and their go.sum files are complete.
#
# Cached under ${XDG_CACHE_HOME:-$HOME/.cache}/magnum-gitops/capi/<version>/:
#   bin/{capi-core,capi-cabpk,capi-kcp,capd,kube-controller-manager}
#   config/{core,cabpk,kcp,capd}/{crd/*.yaml,webhook.yaml}
# Prints that directory on its last line (CAPI_BIN for the e2e tests).
set -euo pipefail
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"

CAPI_VERSION="${CAPI_VERSION:-v1.14.2}"
K8S_VERSION="${K8S_VERSION:-1.37.0}"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/magnum-gitops/capi/${CAPI_VERSION}"
mkdir -p "$cache/bin"

HACK_NAME=capi
# shellcheck source=hack/lib.sh
. "$(dirname "$0")/lib.sh"
command -v go >/dev/null || die "go is not on PATH"

module_dir() {
  local out dir
  out=$(go mod download -json "$1@$2") || die "go mod download $1@$2 failed: $out"
  dir=$(printf '%s\n' "$out" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
  [ -n "$dir" ] && [ -d "$dir" ] || die "go mod download $1@$2: no module directory in: $out"
  echo "$dir"
}

# The sources, laid out as the repository; kept in the cache so a rebuild only links.
src="$cache/src"
if [ ! -f "$src/test/go.mod" ]; then
  log "laying out cluster-api $CAPI_VERSION (root, api and test modules) as the repository"
  rm -rf "$src.tmp"
  mkdir -p "$src.tmp/api" "$src.tmp/test"
  cp -r "$(module_dir sigs.k8s.io/cluster-api "$CAPI_VERSION")/." "$src.tmp/"
  cp -r "$(module_dir sigs.k8s.io/cluster-api/api "$CAPI_VERSION")/." "$src.tmp/api/"
  cp -r "$(module_dir sigs.k8s.io/cluster-api/test "$CAPI_VERSION")/." "$src.tmp/test/"
  chmod -R u+w "$src.tmp"
  rm -rf "$src"
  mv "$src.tmp" "$src"
fi

# build NAME DIR PKG: one go build -o per main (both kubeadm mains want the name kubeadm).
build() {
  local name="$1" dir="$2" pkg="$3" bin="$cache/bin/$1" start=$SECONDS
  [ -x "$bin" ] && return 0
  log "building $name ($CAPI_VERSION; first run: minutes on 2 cores)"
  (cd "$dir" && CGO_ENABLED=0 nice -n 10 go build -trimpath -ldflags "-s -w" -o "$bin.tmp" "$pkg") ||
    { rm -f "$bin.tmp"; die "building $name failed"; }
  mv "$bin.tmp" "$bin"
  log "built $name in $((SECONDS - start))s"
}
build capi-core "$src" ./core
build capi-cabpk "$src" ./bootstrap/kubeadm
build capi-kcp "$src" ./controlplane/kubeadm
build capd "$src/test" ./infrastructure/docker

# CRDs and webhook configurations, as each provider's config/ holds them.
copy_config() {
  local name="$1" dir="$2" out="$cache/config/$1"
  [ -f "$out/webhook.yaml" ] && return 0
  rm -rf "$out.tmp" && mkdir -p "$out.tmp/crd"
  cp "$dir"/config/crd/bases/*.yaml "$out.tmp/crd/" || die "$dir has no config/crd/bases"
  cp "$dir"/config/webhook/manifests.yaml "$out.tmp/webhook.yaml" || die "$dir has no config/webhook/manifests.yaml"
  chmod -R u+w "$out.tmp"
  rm -rf "$out" && mv "$out.tmp" "$out"
}
mkdir -p "$cache/config"
copy_config core "$src/core"
copy_config cabpk "$src/bootstrap/kubeadm"
copy_config kcp "$src/controlplane/kubeadm"
copy_config capd "$src/test/infrastructure/docker"

# kube-controller-manager, built as hack/testbin.sh builds kube-apiserver (k8s.io/kubernetes
# with each staging module replaced by its published v0.X.Y).
kcm="$cache/bin/kube-controller-manager"
if [ ! -x "$kcm" ]; then
  start=$SECONDS
  log "building kube-controller-manager v${K8S_VERSION} (garbage collector; first run: minutes on 2 cores)"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  (
    cd "$work"
    go mod init magnum-gitops.local/tools/kube-controller-manager >/dev/null 2>&1
    gomod=$(go mod download -json "k8s.io/kubernetes@v${K8S_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
    [ -f "$gomod" ] || exit 1
    staging_version="v0.${K8S_VERSION#1.}"
    minor=$(echo "$K8S_VERSION" | cut -d. -f2)
    go mod edit -require "k8s.io/kubernetes@v${K8S_VERSION}"
    for m in $(sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$gomod"); do
      go mod edit -replace "$m=$m@$staging_version"
    done
    GOFLAGS=-mod=mod go get "k8s.io/kubernetes/cmd/kube-controller-manager@v${K8S_VERSION}" >/dev/null
    GOFLAGS=-mod=mod CGO_ENABLED=0 nice -n 10 go build -trimpath \
      -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=v${K8S_VERSION} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor}" \
      -o "$kcm.tmp" k8s.io/kubernetes/cmd/kube-controller-manager
  ) || { rm -f "$kcm.tmp"; die "building kube-controller-manager v${K8S_VERSION} failed"; }
  mv "$kcm.tmp" "$kcm"
  log "built kube-controller-manager in $((SECONDS - start))s"
fi

for b in capi-core capi-cabpk capi-kcp capd kube-controller-manager; do
  [ -x "$cache/bin/$b" ] || die "$cache/bin/$b is missing after the build"
done
[ "$SECONDS" -gt 5 ] && log "ready after ${SECONDS}s"
echo "$cache"
