#!/usr/bin/env bash
# Tests of the magnum-gitops Magnum driver (see README.md, "Tests").
#
#   contrib/magnum-driver/run-tests.sh [pytest args]
#
# Uses Debian's /usr/bin/python3 and Debian packages only (no PyPI):
#   apt-get install -y python3-magnum python3-oslotest python3-testscenarios \
#     python3-pytest python3-requests git age
# The integration tests run the real service from MAGNUM_GITOPS_BIN; without it they are
# skipped, and with CI=true they fail.
set -euo pipefail
cd "$(dirname "$0")"

PY=/usr/bin/python3
missing=()
for mod in magnum oslotest testscenarios pytest requests yaml; do
  "$PY" -c "import $mod" 2>/dev/null || missing+=("$mod")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "run-tests.sh: $PY lacks ${missing[*]}; install: apt-get install -y python3-magnum" \
    "python3-oslotest python3-testscenarios python3-pytest python3-requests" >&2
  exit 1
fi
if [ -n "${MAGNUM_GITOPS_BIN:-}" ]; then
  for tool in git age-keygen; do
    command -v "$tool" >/dev/null || { echo "run-tests.sh: $tool is needed (apt-get install -y git age)" >&2; exit 1; }
  done
fi

export PYTHONDONTWRITEBYTECODE=1
exec "$PY" -m pytest -q "$@"   # paths default to pyproject.toml testpaths (tests/)
