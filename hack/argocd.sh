#!/usr/bin/env bash
# argocd.sh: provide Argo CD for the Argo CD end-to-end tests (issue 48) without downloading
# a prebuilt binary. Argo CD v3.6.1 is built from its module on the Go module proxy: its
# go.mod replaces github.com/argoproj/argo-cd/gitops-engine/v3 with ./gitops-engine, a
# nested module the zip does not hold, so that module is taken from the proxy at the same
# version and copied there (as hack/capi.sh does for Cluster API's). The module needs Go
# 1.27: GOTOOLCHAIN=go1.27.3 for this build alone (the go command takes that toolchain from
# the proxy, about 76 MB, once). Not its ./cmd, which links every Argo CD program: the
# module builds hack/argocd/main.go, one binary that runs as argocd-application-controller,
# argocd-repo-server or argocd-cmp-server by the name it is run under (a changed main.go is
# rebuilt: its digest is kept beside the binary); this script caches it, with a link per
# name, under ${XDG_CACHE_HOME:-$HOME/.cache}/magnum-gitops/argocd/<version>/ and prints that
# directory on its last line (ARGOCD_BIN). Argo CD's whole ./cmd built in 348 s on the
# project's idle 2-core VM, cold; docs/testing.md has this build's time.
#
# The repo-server runs the helm CLI for Helm sources (the Applications magnum-gitops writes
# are Helm sources), so helm v3.22.0 is built into the same directory, with the project's
# Go (GOTOOLCHAIN=local: helm's go.mod asks for Go 1.26.0), its version stamped as helm's
# own release builds stamp it (`helm version --short` prints it; a stale one is rebuilt).
# Put that directory first on PATH for the repo-server (internal/testenv/argocd does).
#
# The Application and AppProject CRDs of the same release go to crds/ beside the binary:
# the tests install them from there, since the Go 1.26 go command will not even download a
# module that asks for Go 1.27. So do the release's git-verify-wrapper.sh and
# gpg-wrapper.sh, which its image puts on PATH: the repo-server runs git-verify-wrapper.sh
# for every commit it renders, GPG enabled or not, and fails the manifest generation with
# "permission denied" when it cannot.
set -euo pipefail

ARGOCD_VERSION="${ARGOCD_VERSION:-v3.6.1}"
ARGOCD_GO="${ARGOCD_GO:-go1.27.3}"
HELM_VERSION="${HELM_VERSION:-v3.22.0}"
HELM_GO="${HELM_GO:-local}"

cache="${XDG_CACHE_HOME:-$HOME/.cache}/magnum-gitops/argocd/$ARGOCD_VERSION"
names=(argocd-application-controller argocd-repo-server argocd-cmp-server)

HACK_NAME=argocd
# shellcheck source=hack/lib.sh
. "$(dirname "$0")/lib.sh"

lock_cache "$cache"

work=""
trap '[ -z "$work" ] || rm -rf "$work"' EXIT

# module_dir MODULE VERSION: its directory in the module cache, downloaded if needed.
module_dir() {
  local out dir
  out=$(GOTOOLCHAIN="$ARGOCD_GO" go mod download -json "$1@$2") || die "go mod download $1@$2 failed: $out"
  dir=$(printf '%s\n' "$out" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
  [ -n "$dir" ] && [ -d "$dir" ] || die "go mod download $1@$2: no module directory in: $out"
  echo "$dir"
}

build_argocd() {
  local main stamp
  main="$(dirname "$0")/argocd/main.go"
  stamp=$(sha256sum "$main" | cut -d' ' -f1)
  [ -x "$cache/argocd" ] && [ "$(cat "$cache/argocd.main.sha256" 2>/dev/null)" = "$stamp" ] && return 0
  local argo engine start
  argo=$(module_dir github.com/argoproj/argo-cd/v3 "$ARGOCD_VERSION")
  engine=$(module_dir github.com/argoproj/argo-cd/gitops-engine/v3 "$ARGOCD_VERSION")
  work=$(mktemp -d)
  cp -r "$argo"/. "$work"/
  chmod -R u+w "$work"
  rm -rf "$work/gitops-engine"
  cp -r "$engine" "$work/gitops-engine"
  chmod -R u+w "$work/gitops-engine"
  mkdir -p "$work/cmd/magnum-gitops-e2e"
  cp "$main" "$work/cmd/magnum-gitops-e2e/main.go"

  start=$SECONDS
  log "building Argo CD $ARGOCD_VERSION with $ARGOCD_GO (first run: about 5 minutes on 2 idle cores)"
  (
    cd "$work"
    # A file named on the command line is built whatever its build constraint (ignore,
    # which keeps it out of this project's own module).
    GOTOOLCHAIN="$ARGOCD_GO" GOFLAGS=-mod=mod CGO_ENABLED=0 nice -n 19 \
      go build -trimpath -ldflags="-s -w" -o "$cache/argocd.tmp" ./cmd/magnum-gitops-e2e/main.go
  ) || { rm -f "$cache/argocd.tmp"; die "building Argo CD $ARGOCD_VERSION failed"; }
  mv "$cache/argocd.tmp" "$cache/argocd"
  echo "$stamp" >"$cache/argocd.main.sha256"
  for n in "${names[@]}"; do
    ln -sf argocd "$cache/$n"
  done
  "$cache/argocd-application-controller" --help >/dev/null || die "$cache/argocd-application-controller does not run"
  log "built Argo CD $ARGOCD_VERSION in $((SECONDS - start))s"
}

# copy_release_files: the files of the release's module the tests need beside the binary.
copy_release_files() {
  local src dst argo=""
  for src in manifests/crds/application-crd.yaml manifests/crds/appproject-crd.yaml \
    hack/git-verify-wrapper.sh hack/gpg-wrapper.sh; do
    case "$src" in
    manifests/crds/*) dst="$cache/crds/${src##*/}" ;;
    *) dst="$cache/${src##*/}" ;;
    esac
    [ -s "$dst" ] && continue
    [ -n "$argo" ] || argo=$(module_dir github.com/argoproj/argo-cd/v3 "$ARGOCD_VERSION")
    mkdir -p "${dst%/*}"
    cp "$argo/$src" "$dst.tmp"
    chmod u+w "$dst.tmp"
    case "$dst" in *.sh) chmod 0755 "$dst.tmp" ;; esac
    mv "$dst.tmp" "$dst"
  done
}

build_helm() {
  if [ -x "$cache/helm" ] && [ "$("$cache/helm" version --short 2>/dev/null)" = "$HELM_VERSION" ]; then
    return 0
  fi
  local gobin start
  gobin=$(mktemp -d)
  start=$SECONDS
  log "building helm $HELM_VERSION with GOTOOLCHAIN=$HELM_GO"
  (
    cd "$gobin"
    GOTOOLCHAIN="$HELM_GO" GOBIN="$gobin" GOFLAGS= CGO_ENABLED=0 nice -n 19 \
      go install -trimpath -ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" \
      "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
  ) || { rm -rf "$gobin"; die "building helm $HELM_VERSION failed"; }
  mv "$gobin/helm" "$cache/helm"
  rm -rf "$gobin"
  local got
  got=$("$cache/helm" version --short) || die "$cache/helm does not run"
  [ "$got" = "$HELM_VERSION" ] || die "$cache/helm says it is $got, want $HELM_VERSION"
  log "built helm $HELM_VERSION in $((SECONDS - start))s"
}

build_argocd
copy_release_files
build_helm
echo "$cache"
