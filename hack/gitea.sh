#!/usr/bin/env bash
# gitea.sh: provide a real Gitea for the review-mode end-to-end tests (test/e2e, issue: pull
# requests an operator approves) without downloading a prebuilt binary. Gitea is built from
# its module on the Go module proxy (v1.26.0: the newest whose dependencies the proxy serves)
# with sqlite (cgo), and cached with the `options/` directory it reads its translations from
# (it exits at start without them) under ${XDG_CACHE_HOME:-$HOME/.cache}/magnum-gitops/gitea/:
#   gitea-<version>             the binary
#   options-<version>/          its options (locale, gitignore, licence and label templates)
# Prints that directory on its last line (GITEA_BIN for the e2e tests).
set -euo pipefail
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"

GITEA_VERSION="${GITEA_VERSION:-v1.26.0}"
K8S_VERSION="${K8S_VERSION:-1.37.0}"

cache="${XDG_CACHE_HOME:-$HOME/.cache}/magnum-gitops/gitea"
mkdir -p "$cache"

HACK_NAME=gitea
# shellcheck source=hack/lib.sh
. "$(dirname "$0")/lib.sh"

command -v go >/dev/null || die "go is not on PATH"
command -v gcc >/dev/null || die "gcc is not on PATH (Gitea's sqlite driver needs cgo)"

bin="$cache/gitea-$GITEA_VERSION"
options="$cache/options-$GITEA_VERSION"
if [ -x "$bin" ] && [ -d "$options/locale" ]; then
  echo "$cache"
  exit 0
fi

out=$(go mod download -json "code.gitea.io/gitea@$GITEA_VERSION") || die "go mod download code.gitea.io/gitea@$GITEA_VERSION failed: $out"
dir=$(printf '%s\n' "$out" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
[ -n "$dir" ] && [ -d "$dir" ] || die "no module directory in: $out"

if [ ! -d "$options/locale" ]; then
  rm -rf "$options.tmp"
  cp -r "$dir/options" "$options.tmp"
  chmod -R u+w "$options.tmp"
  rm -rf "$options"
  mv "$options.tmp" "$options"
fi

if [ ! -x "$bin" ]; then
  work=$(mktemp -d)
  cp -r "$dir"/. "$work"/
  chmod -R u+w "$work"
  start=$SECONDS
  log "building gitea $GITEA_VERSION (first run: 15-30 minutes on 2 cores)"
  (
    cd "$work"
    # Gitea's Makefile stamps the version the same way; without it `gitea --version` says "development".
    CGO_ENABLED=1 GOFLAGS=-mod=mod nice -n 19 go build -trimpath \
      -tags 'sqlite sqlite_unlock_notify' \
      -ldflags="-s -w -X main.Version=${GITEA_VERSION#v}" -o "$bin.tmp" .
  ) || { rm -rf "$work"; rm -f "$bin.tmp"; die "building gitea $GITEA_VERSION failed"; }
  rm -rf "$work"
  mv "$bin.tmp" "$bin"
  log "built gitea $GITEA_VERSION in $((SECONDS - start))s"
fi
"$bin" --version >&2 || die "$bin does not run"
echo "$cache"
