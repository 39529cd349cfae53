#!/usr/bin/env bash
# golangci-lint.sh: provide the pinned golangci-lint without downloading a prebuilt binary.
# It is built from the Go module proxy with the local Go toolchain (GOTOOLCHAIN=local) and
# cached under ${XDG_CACHE_HOME:-$HOME/.cache}/magnum-gitops/tools/golangci-lint-<version>/.
# It is rebuilt when the local Go toolchain changes: golangci-lint refuses to lint a module
# whose go directive is newer than the Go it was built with.
# Prints the path of the binary on its last line.
set -euo pipefail

GOLANGCI_LINT_VERSION="${GOLANGCI_LINT_VERSION:-v2.15.0}"
export GOTOOLCHAIN=local

dir="${XDG_CACHE_HOME:-$HOME/.cache}/magnum-gitops/tools/golangci-lint-${GOLANGCI_LINT_VERSION}"
bin="$dir/golangci-lint"

log() { echo "golangci-lint.sh: $*" >&2; }

go_version=$(go env GOVERSION) || { log "no usable go on PATH"; exit 1; }

# `go version FILE` prints "FILE: go1.X.Y": the toolchain the cached binary was built with.
built_with() { go version "$1" 2>/dev/null | awk '{print $NF}'; }

if [ -x "$bin" ] && [ "$(built_with "$bin")" != "$go_version" ]; then
  log "cached $bin was built with $(built_with "$bin"), the local Go is $go_version: rebuilding"
fi

if [ ! -x "$bin" ] || [ "$(built_with "$bin")" != "$go_version" ]; then
  log "building golangci-lint ${GOLANGCI_LINT_VERSION} with ${go_version} from the Go module proxy (first run: ~3-5 min on 2 cores)"
  mkdir -p "$dir"
  work=$(mktemp -d "$dir/build.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  start=$(date +%s)
  # Outside any module and workspace, with no inherited -mod flag: `go install pkg@version`
  # builds golangci-lint with the versions its own go.mod pins.
  if ! (cd "$work" && GOWORK=off GOFLAGS= GOBIN="$work" \
        nice -n 10 go install -trimpath \
        "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@${GOLANGCI_LINT_VERSION}" >&2); then
    log "ERROR: building golangci-lint ${GOLANGCI_LINT_VERSION} with ${go_version} failed (see above)."
    log "If the module proxy refuses the version (403), or it does not build with this Go, pin a"
    log "neighbouring release: GOLANGCI_LINT_VERSION=vX.Y.Z $0 (list: go list -m -versions github.com/golangci/golangci-lint/v2)."
    exit 1
  fi
  mv -f "$work/golangci-lint" "$bin"
  log "built $bin in $(( $(date +%s) - start ))s"
fi

"$bin" version >&2 || { log "ERROR: $bin does not run"; exit 1; }
echo "$bin"
