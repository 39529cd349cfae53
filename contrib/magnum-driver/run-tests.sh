#!/usr/bin/env bash
# Tests of the magnum-gitops Magnum driver (see docs/testing.md).
#
#   contrib/magnum-driver/run-tests.sh [pytest args]
#
# Uses Debian's /usr/bin/python3 and Debian packages only (no PyPI), and installs those
# that are missing (as root, or through sudo):
#   apt-get install -y python3-magnum python3-oslotest python3-testscenarios \
#     python3-pytest python3-requests python3-yaml git age
# The integration tests run the real service from MAGNUM_GITOPS_BIN; without it they are
# skipped, and with CI=true they fail.
set -euo pipefail
cd "$(dirname "$0")"

PY=/usr/bin/python3
PACKAGES=(python3-magnum python3-oslotest python3-testscenarios python3-pytest python3-requests python3-yaml)

# apt_install installs Debian packages, as hack/testbin.sh does for etcd: `make test` must
# work on a fresh machine, and Debian's packages are the only ones these tests use.
apt_install() {
  local sudo=()
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || return 1
    sudo=(sudo -n) # never stop at a password prompt
  fi
  echo "run-tests.sh: installing $* from Debian" >&2
  "${sudo[@]}" apt-get update -qq >/dev/null
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

missing_modules() {
  missing=()
  for mod in magnum oslotest testscenarios pytest requests yaml; do
    "$PY" -c "import $mod" 2>/dev/null || missing+=("$mod")
  done
}
missing_modules
if [ ${#missing[@]} -gt 0 ]; then
  apt_install "${PACKAGES[@]}" || true
  missing_modules
  if [ ${#missing[@]} -gt 0 ]; then
    echo "run-tests.sh: $PY lacks ${missing[*]}; install: apt-get install -y ${PACKAGES[*]}" >&2
    exit 1
  fi
fi
if [ -n "${MAGNUM_GITOPS_BIN:-}" ]; then
  for tool in git age-keygen; do
    command -v "$tool" >/dev/null || apt_install git age || true
    command -v "$tool" >/dev/null || { echo "run-tests.sh: $tool is needed (apt-get install -y git age)" >&2; exit 1; }
  done
fi

export PYTHONDONTWRITEBYTECODE=1
exec "$PY" -m pytest -q "$@"   # paths default to pyproject.toml testpaths (tests/)
