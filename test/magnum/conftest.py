"""One stack for the whole run (stack.Stack), brought up once and stopped at the end.

Run through hack/e2e-magnum.sh, which installs the Debian packages, builds the driver shim's
wheel and installs it into E2E_MAGNUM_DRIVER_SITE, and passes MAGNUM_GITOPS_BIN. Nothing in
this suite skips: a missing piece is an error. With CI=true a skipped test (from a plugin,
say) fails the run as well.
"""

import os
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import report as e2e_report  # noqa: E402
from stack import Stack  # noqa: E402


def _required(name, what):
    value = os.environ.get(name)
    if not value:
        raise pytest.UsageError("%s is not set: %s (hack/e2e-magnum.sh sets it)" % (name, what))
    return value


@pytest.fixture(scope="session")
def stack(request):
    serve_bin = _required("MAGNUM_GITOPS_BIN", "the magnum-gitops binary (make build)")
    site = _required("E2E_MAGNUM_DRIVER_SITE",
                     "the directory the driver shim's wheel is installed into")
    if not os.access(serve_bin, os.X_OK):
        raise pytest.UsageError("MAGNUM_GITOPS_BIN=%s is not executable" % serve_bin)
    workdir = os.environ.get("E2E_MAGNUM_WORKDIR") or tempfile.mkdtemp(prefix="e2e-magnum-")
    os.makedirs(workdir, exist_ok=True)
    s = Stack(workdir, os.path.abspath(serve_bin), os.path.abspath(site))
    try:
        s.start()
    except BaseException:
        s.stop()
        print("\nstack logs kept in %s" % s.logs, file=sys.stderr)
        raise
    finally:
        e2e_report.BRINGUP.update({k: round(v, 1) for k, v in s.timings.items()})
    yield s
    s.stop()
    if request.session.testsfailed or os.environ.get("E2E_MAGNUM_KEEP"):
        e2e_report.NOTES.append("logs and repositories kept in %s" % workdir)
    else:
        s.clean_up_workdir()


# The lifecycle starts from an empty repository and asserts on the whole history; the fault
# tests make their own cluster after it; tempest comes last (it checks what it left behind).
ORDER = ("test_lifecycle.py", "test_faults.py", "test_tempest.py")


def pytest_collection_modifyitems(session, config, items):
    def rank(item):
        name = item.fspath.basename
        return ORDER.index(name) if name in ORDER else len(ORDER)
    items.sort(key=rank)  # stable: the order within a module stays


_skipped = []


def pytest_runtest_logreport(report):
    if report.skipped:
        _skipped.append(report.nodeid)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    lines = e2e_report.lines()
    if lines:
        terminalreporter.section("e2e-magnum report")
        for line in lines:
            terminalreporter.write_line(line)
    e2e_report.write()


def pytest_sessionfinish(session, exitstatus):
    if _skipped and os.environ.get("CI", "").lower() == "true":
        sys.stderr.write("CI=true and %d test(s) skipped: %s\n" % (len(_skipped),
                                                                  ", ".join(_skipped)))
        session.exitstatus = 1
