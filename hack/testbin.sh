#!/usr/bin/env bash
# testbin.sh: provide kube-apiserver and etcd for envtest without downloading prebuilt
# binaries. kube-apiserver is built from the Go module proxy (k8s.io/kubernetes with each
# staging module replaced by its published v0.X.Y), etcd comes from Debian's etcd-server.
# Both are cached under ${XDG_CACHE_HOME:-$HOME/.cache}/magnum-gitops/testbin/<version>/.
# Prints the directory to use as KUBEBUILDER_ASSETS on its last line.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-1.37.0}"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/magnum-gitops/testbin/${K8S_VERSION}"
mkdir -p "$cache"

log() { echo "testbin: $*" >&2; }

if [ ! -x "$cache/kube-apiserver" ]; then
  log "building kube-apiserver v${K8S_VERSION} from the Go module proxy (first run: ~10 min on 2 cores)"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  cd "$work"
  go mod init magnum-gitops.local/tools/kube-apiserver >/dev/null 2>&1
  # The staging modules k8s.io/kubernetes replaces with ./staging/src/... are published as
  # k8s.io/<name> v0.<minor>.<patch>: read the list from its own go.mod.
  gomod=$(go mod download -json "k8s.io/kubernetes@v${K8S_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  [ -f "$gomod" ] || { log "cannot download k8s.io/kubernetes@v${K8S_VERSION}"; exit 1; }
  staging_version="v0.${K8S_VERSION#1.}"
  minor=$(echo "$K8S_VERSION" | cut -d. -f2)
  go mod edit -require "k8s.io/kubernetes@v${K8S_VERSION}"
  for m in $(sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$gomod"); do
    go mod edit -replace "$m=$m@$staging_version"
  done
  # go get resolves the rest of the build list without moving k8s.io/kubernetes off the
  # pinned version (a bare tidy would drop the require: no .go file imports a main package).
  GOFLAGS=-mod=mod go get "k8s.io/kubernetes/cmd/kube-apiserver@v${K8S_VERSION}" >/dev/null
  GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=v${K8S_VERSION} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor}" \
    -o "$cache/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver
  mv "$cache/kube-apiserver.tmp" "$cache/kube-apiserver"
fi

if [ ! -x "$cache/etcd" ]; then
  etcd_bin=$(command -v etcd || true)
  if [ -z "$etcd_bin" ]; then
    log "installing etcd-server from Debian"
    if [ "$(id -u)" = 0 ]; then
      apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server >/dev/null
    else
      sudo apt-get update -qq >/dev/null && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server >/dev/null
    fi
    etcd_bin=$(command -v etcd)
  fi
  ln -sf "$etcd_bin" "$cache/etcd"
fi

"$cache/kube-apiserver" --version >&2
"$cache/etcd" --version 2>/dev/null | sed -n 1p >&2  # sed reads all: head would SIGPIPE etcd, failing the script under pipefail
echo "$cache"
