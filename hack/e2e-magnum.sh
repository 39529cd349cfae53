#!/usr/bin/env bash
# e2e-magnum.sh: the real Magnum stack end to end (test/magnum, see its README.md).
#
#   hack/e2e-magnum.sh [pytest args]        e.g. -k lifecycle, -x
#   E2E_MAGNUM_DRIVER_REV=<commit> hack/e2e-magnum.sh   the driver shim as at that commit
#   E2E_MAGNUM_CAPI=1 hack/e2e-magnum.sh test_lifecycle.py   against real Flux and Cluster
#       API instead of their stand-in (make e2e-magnum-capi; needs KUBEBUILDER_ASSETS,
#       FLUX_BIN and CAPI_BIN)
#
# 1. Installs the Debian packages the stack needs (Keystone, Glance, Magnum 15.0.1 API and
#    conductor, the OpenStack CLI with magnumclient, RabbitMQ, MariaDB, tempest and
#    magnum-tempest-plugin, age, git, pytest) with apt-get --no-install-recommends; as
#    root, or through `sudo -n`. No service is started by the packages.
# 2. Uses MAGNUM_GITOPS_BIN, or builds bin/magnum-gitops.
# 3. Builds the driver shim's wheel offline (pip wheel --no-deps --no-build-isolation
#    --no-index, from a copy of contrib/magnum-driver so the tree stays clean) and installs
#    it with pip install --no-deps --no-index --target DIR: DIR goes on magnum-api's and
#    magnum-conductor's PYTHONPATH, as an operator installs it.
# 4. Runs pytest in test/magnum with Debian's /usr/bin/python3. Every process of the stack
#    runs in its own process group; pytest stops them (SIGTERM, then SIGKILL), and this
#    script's exit trap kills any group still alive (if pytest itself was killed).
#
# Exit status: pytest's (non-zero on any failure; with CI=true also on any skipped test).
# Logs stay in the printed work directory when something failed (or E2E_MAGNUM_KEEP=1).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
PY=/usr/bin/python3
start=$SECONDS
log() { echo "e2e-magnum: $*" >&2; }

PACKAGES=(
  python3-keystone python3-keystoneclient python3-glance python3-glanceclient
  python3-magnum magnum-api magnum-conductor python3-openstackclient python3-magnumclient
  rabbitmq-server mariadb-server python3-pymysql
  tempest magnum-tempest-plugin
  age git python3-pytest python3-yaml python3-cryptography
  python3-pip python3-setuptools python3-wheel
)

# -- 1. Debian packages --------------------------------------------------------------------
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=()
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || { log "need root (or sudo) to install: ${missing[*]}"; exit 1; }
    sudo=(sudo -n)
  fi
  log "installing ${#missing[@]} Debian packages: ${missing[*]}"
  # Packages must not start their services (RabbitMQ, MariaDB): the suite runs its own on
  # loopback. Containers usually have a policy-rc.d saying so; lay one down if not.
  guard=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    guard=/usr/sbin/policy-rc.d
    printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$guard" >/dev/null
    "${sudo[@]}" chmod 755 "$guard"
  fi
  apt_start=$SECONDS
  if ! { "${sudo[@]}" apt-get update -qq &&
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      --no-install-recommends "${missing[@]}" >/dev/null; }; then
    [ -z "$guard" ] || "${sudo[@]}" rm -f "$guard"
    log "apt-get install failed"
    exit 1
  fi
  [ -z "$guard" ] || "${sudo[@]}" rm -f "$guard"
  log "packages installed in $((SECONDS - apt_start))s"
fi

# -- 2. the service ---------------------------------------------------------------------------
if [ -z "${MAGNUM_GITOPS_BIN:-}" ]; then
  log "building bin/magnum-gitops"
  "${GO:-go}" build -o bin/magnum-gitops ./cmd/magnum-gitops
  MAGNUM_GITOPS_BIN=$repo/bin/magnum-gitops
fi
if [ ! -x "$MAGNUM_GITOPS_BIN" ]; then
  log "MAGNUM_GITOPS_BIN=$MAGNUM_GITOPS_BIN is not executable"
  exit 1
fi
export MAGNUM_GITOPS_BIN

# -- 3. the driver shim as a wheel ---------------------------------------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/e2e-magnum.XXXXXX")
export E2E_MAGNUM_PGIDS=$work/pgids E2E_MAGNUM_WORKDIR=$work/stack
: >"$E2E_MAGNUM_PGIDS"
cleanup() {
  local rc=$?
  # Any process group the tests started and did not stop (pytest killed, say).
  while read -r pgid name; do
    if kill -0 -- "-$pgid" 2>/dev/null; then
      log "stopping $name (process group $pgid) left running"
      kill -TERM -- "-$pgid" 2>/dev/null || true
      sleep 3
      kill -KILL -- "-$pgid" 2>/dev/null || true
    fi
  done <"$E2E_MAGNUM_PGIDS"
  if [ "$rc" = 0 ] && [ -z "${E2E_MAGNUM_KEEP:-}" ]; then
    rm -rf "$work"
  else
    log "work directory (logs, repositories, configuration): $work"
  fi
  log "took $((SECONDS - start))s in all (exit $rc)"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

wheel_start=$SECONDS
if [ -n "${E2E_MAGNUM_DRIVER_REV:-}" ]; then
  # The shim as it was at a commit: shows what the suite catches in an older shim.
  mkdir -p "$work/rev"
  git archive "$E2E_MAGNUM_DRIVER_REV" contrib/magnum-driver | tar -x -C "$work/rev"
  mv "$work/rev/contrib/magnum-driver" "$work/driver-src"
  log "driver shim from $E2E_MAGNUM_DRIVER_REV"
else
  cp -r contrib/magnum-driver "$work/driver-src"
fi
rm -rf "$work/driver-src/build" "$work/driver-src"/*.egg-info
(cd "$work" && "$PY" -m pip wheel -q --no-deps --no-build-isolation --no-index -w dist ./driver-src)
wheel=$(ls "$work"/dist/magnum_gitops_driver-*.whl)
"$PY" -m pip install -q --no-deps --no-index --target "$work/driver-site" "$wheel" 2>&1 |
  grep -v "Running pip as the 'root' user" >&2 || true
[ -d "$work/driver-site/magnum_gitops_driver" ] || { log "installing $wheel failed"; exit 1; }
export E2E_MAGNUM_DRIVER_SITE=$work/driver-site
log "driver wheel $(basename "$wheel") built and installed in $((SECONDS - wheel_start))s"

# -- 3b. the real management cluster (E2E_MAGNUM_CAPI=1) -------------------------------------
# test/e2e's TestMagnumManagementCluster runs real Flux and Cluster API for the stack
# (test/magnum/management.py); it needs the binaries make testbin, flux and capi cache.
if [ "${E2E_MAGNUM_CAPI:-}" = 1 ]; then
  for v in KUBEBUILDER_ASSETS FLUX_BIN CAPI_BIN; do
    [ -n "${!v:-}" ] || { log "E2E_MAGNUM_CAPI=1 needs $v (make e2e-magnum-capi sets it)"; exit 1; }
  done
  export E2E_TEST_BIN=$work/e2e.test
  "${GO:-go}" test -c -tags e2e -o "$E2E_TEST_BIN" ./test/e2e
  log "management cluster: real Flux and Cluster API (test/e2e built into $E2E_TEST_BIN)"
fi

# -- 4. the suite -----------------------------------------------------------------------------
export E2E_MAGNUM_REPORT=${E2E_MAGNUM_REPORT:-$work/report.json}
cd test/magnum
PYTHONDONTWRITEBYTECODE=1 "$PY" -m pytest -p no:cacheprovider -v -rfE "$@"
