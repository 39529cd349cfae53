#!/usr/bin/env bash
# release.sh: make one release of magnum-gitops into one directory, every artifact carrying
# the same version: the VERSION file, which `make release VERSION=` must name:
#   magnum-gitops_<v>_linux_<arch>          static binaries (CGO off, -trimpath, stripped)
#   magnum-gitops_<v>_oci/                  the image, both platforms in one index (OCI layout)
#   magnum-gitops-<v>.tgz                   the service's Helm chart
#   magnum_gitops_driver-<v>-py3-none-any.whl   the driver shim
#   magnum-gitops_<v>_linux_<arch>.cdx.json an SBOM of each binary's Go module graph (CycloneDX)
#   SHA256SUMS                              of every file above
# Usage: hack/release.sh VERSION OUTDIR. Everything is built here from the module proxy and
# Debian's packages; nothing is downloaded prebuilt. The same commit gives the same bytes
# (the dates are the commit's), so SHA256SUMS can be compared between two builds.
set -euo pipefail
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}" CGO_ENABLED=0

version=${1:?usage: hack/release.sh VERSION OUTDIR}
out=${2:?usage: hack/release.sh VERSION OUTDIR}
cd "$(dirname "$0")/.."

log() { echo "release: $*" >&2; }
die() {
  log "ERROR: $*"
  exit 2
}

# A semantic version without a leading v (https://semver.org), as the chart and the wheel
# need it; a pre-release (-rc.1) is allowed, build metadata is not (PEP 440 has none).
[[ $version =~ ^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$ ]] ||
  die "VERSION=$version is not a semantic version like 1.2.3 or 1.2.3-rc.1"
[ "$version" = "$(cat VERSION)" ] ||
  die "VERSION=$version differs from the VERSION file ($(cat VERSION)): set the file first, so the shim and the chart carry it too"
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  [ "${RELEASE_DIRTY:-0}" = 1 ] || die "the checkout has uncommitted changes: a release is built from a commit (RELEASE_DIRTY=1 to build anyway)"
fi

rm -rf "$out"
mkdir -p "$out"
out=$(cd "$out" && pwd)

log "binaries and image (OCI layout, linux/amd64 and linux/arm64)"
# make image builds each platform's binary into IMAGE_BIN_DIR as magnum-gitops_<v>_linux_<arch>.
make --no-print-directory image VERSION="$version" IMAGE_PLATFORMS="linux/amd64 linux/arm64" \
  IMAGE_BIN_DIR="$out" IMAGE_OUT="$out/magnum-gitops_${version}_oci" >&2

log "chart"
make --no-print-directory chart VERSION="$version" CHART_OUT="$out" >&2

log "driver shim wheel"
shim=$(mktemp -d)
trap 'rm -rf "$shim"' EXIT
cp -r contrib/magnum-driver "$shim/src"
# Debian's Python with its setuptools and wheel (python3-pip python3-setuptools python3-wheel),
# as hack/e2e-magnum.sh builds it: offline, no build isolation.
py=/usr/bin/python3
{ "$py" -c 'import setuptools, wheel' && "$py" -m pip --version; } >/dev/null 2>&1 ||
  die "the shim's wheel needs Debian's python3-pip python3-setuptools python3-wheel (apt-get install them)"
(cd "$shim" && SOURCE_DATE_EPOCH=$(git -C "$OLDPWD" log -1 --format=%ct) \
  "$py" -m pip wheel -q --no-deps --no-build-isolation --no-index -w "$out" ./src) >&2
ls "$out"/magnum_gitops_driver-"$version"-*.whl >/dev/null 2>&1 ||
  die "the shim's wheel does not carry version $version: $(ls "$out"/*.whl 2>/dev/null)"

log "SBOMs (CycloneDX, the module graph linked into each binary)"
# Built for this machine, then run with each target's GOOS/GOARCH, which it reads as the
# build constraints of the SBOM it writes.
GOBIN="$shim/bin" GOOS= GOARCH= go install github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0
for arch in amd64 arm64; do
  # -noserial and -notimestamp: the same commit gives the same bytes.
  GOOS=linux GOARCH=$arch "$shim/bin/cyclonedx-gomod" app -json -std -noserial -notimestamp \
    -output-version 1.6 -main cmd/magnum-gitops -output "$out/magnum-gitops_${version}_linux_$arch.cdx.json" . >&2
done

(cd "$out" && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%f\n' | LC_ALL=C sort |
  xargs sha256sum >SHA256SUMS)
# The image layout is a directory: its index names every blob by digest, so its index.json's
# sum stands for the whole layout.
(cd "$out" && sha256sum "magnum-gitops_${version}_oci/index.json" >>SHA256SUMS)
log "done: $out"
cat "$out/SHA256SUMS"
