#!/usr/bin/env bash
# argocd.sh: provide Argo CD for the Argo CD end-to-end tests (issue 48) without downloading
# a prebuilt binary. Argo CD v3.6.1 is built from its module on the Go module proxy: its
# go.mod replaces github.com/argoproj/argo-cd/gitops-engine/v3 with ./gitops-engine, a
# nested module the zip does not hold, so that module is taken from the proxy at the same
# version and copied there (as hack/capi.sh does for Cluster API's). The module needs Go
# 1.27: GOTOOLCHAIN=go1.27.3 for this build alone (the go command takes that toolchain from
# the proxy, about 76 MB, once). `go build ./cmd` gives one multi-call binary that runs as
# argocd-application-controller, argocd-repo-server or argocd-cmp-server by the name it is
# run under; this script caches it, with a link per name, under
# ${XDG_CACHE_HOME:-$HOME/.cache}/magnum-gitops/argocd/<version>/ and prints that directory
# on its last line (ARGOCD_BIN). Built in 348 s on the project's idle 2-core VM, cold.
set -euo pipefail

ARGOCD_VERSION="${ARGOCD_VERSION:-v3.6.1}"
ARGOCD_GO="${ARGOCD_GO:-go1.27.3}"

cache="${XDG_CACHE_HOME:-$HOME/.cache}/magnum-gitops/argocd/$ARGOCD_VERSION"
names=(argocd-application-controller argocd-repo-server argocd-cmp-server)

log() { echo "argocd: $*" >&2; }
die() {
  log "ERROR: $*"
  exit 1
}

command -v go >/dev/null || die "go is not on PATH"

if [ -x "$cache/argocd" ]; then
  echo "$cache"
  exit 0
fi
mkdir -p "$cache"

# module_dir MODULE VERSION: its directory in the module cache, downloaded if needed.
module_dir() {
  local out dir
  out=$(GOTOOLCHAIN="$ARGOCD_GO" go mod download -json "$1@$2") || die "go mod download $1@$2 failed: $out"
  dir=$(printf '%s\n' "$out" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
  [ -n "$dir" ] && [ -d "$dir" ] || die "go mod download $1@$2: no module directory in: $out"
  echo "$dir"
}

argo=$(module_dir github.com/argoproj/argo-cd/v3 "$ARGOCD_VERSION")
engine=$(module_dir github.com/argoproj/argo-cd/gitops-engine/v3 "$ARGOCD_VERSION")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$argo"/. "$work"/
chmod -R u+w "$work"
rm -rf "$work/gitops-engine"
cp -r "$engine" "$work/gitops-engine"
chmod -R u+w "$work/gitops-engine"

start=$SECONDS
log "building Argo CD $ARGOCD_VERSION with $ARGOCD_GO (first run: about 6 minutes on 2 idle cores)"
(
  cd "$work"
  GOTOOLCHAIN="$ARGOCD_GO" GOFLAGS=-mod=mod CGO_ENABLED=0 nice -n 19 \
    go build -trimpath -ldflags="-s -w" -o "$cache/argocd.tmp" ./cmd
) || { rm -f "$cache/argocd.tmp"; die "building Argo CD $ARGOCD_VERSION failed"; }
mv "$cache/argocd.tmp" "$cache/argocd"
for n in "${names[@]}"; do
  ln -sf argocd "$cache/$n"
done
"$cache/argocd-application-controller" --help >/dev/null || die "$cache/argocd-application-controller does not run"
log "built Argo CD $ARGOCD_VERSION in $((SECONDS - start))s"
echo "$cache"
