"""Processes of the stack: each in its own process group, with its own log file, stopped
with SIGTERM and then SIGKILL for the whole group, so that nothing outlives the suite.

Every group id is also appended to $E2E_MAGNUM_PGIDS (set by hack/e2e-magnum.sh), which the
runner's exit trap kills in case pytest itself is killed before its clean-up runs.
"""

import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

from shimtests import service as _shim_service

free_port = _shim_service.free_port  # the shim test helpers' own

PYTHON = "/usr/bin/python3"  # Debian's interpreter: it has Debian's OpenStack modules


def run(args, timeout=300, **kw):
    """Run a command to completion; the error names it and shows its output."""
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kw)
    if p.returncode != 0:
        raise RuntimeError("%s exited %d:\n%s\n%s" % (" ".join(args[:3]), p.returncode,
                                                    p.stdout[-3000:], p.stderr[-3000:]))
    return p.stdout


def tail(path, lines=40):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


class Process(object):
    """One long-running process (and whatever it forks) in a session of its own."""

    def __init__(self, name, args, log, env=None, cwd=None, term_timeout=10):
        self.name, self.args, self.log = name, args, log
        self.env, self.cwd, self.term_timeout = env, cwd, term_timeout
        out = open(log, "ab")
        try:
            self.proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=env, cwd=cwd,
                                         start_new_session=True)
        finally:
            out.close()
        self.pgid = self.proc.pid  # a new session's leader: its pid is the group's id
        record = os.environ.get("E2E_MAGNUM_PGIDS")
        if record:
            with open(record, "a") as f:
                f.write("%d %s\n" % (self.pgid, name))

    def running(self):
        return self.proc.poll() is None

    def check(self):
        if not self.running():
            raise RuntimeError("%s exited %s; its log (%s) ends:\n%s"
                               % (self.name, self.proc.returncode, self.log, tail(self.log)))

    def _group_alive(self):
        try:
            os.killpg(self.pgid, 0)
            return True
        except ProcessLookupError:
            return False
        except PermissionError:
            return True

    def again(self):
        """A new Process of the same command, environment and directory, logging to the
        same file (a restart after stop or kill)."""
        return Process(self.name, self.args, self.log, env=self.env, cwd=self.cwd,
                       term_timeout=self.term_timeout)

    def kill(self):
        """SIGKILL to the group, as the kernel's OOM killer or a node failure ends it: no
        handler runs. Waits until the group is gone."""
        try:
            os.killpg(self.pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + 10
        while self._group_alive() and time.monotonic() < deadline:
            self.proc.poll()
            time.sleep(0.05)
        self.proc.poll()
        if self._group_alive():
            raise RuntimeError("%s (process group %d) survived SIGKILL" % (self.name, self.pgid))

    def stop(self):
        """SIGTERM to the group, SIGKILL to the group after term_timeout; waits for both."""
        if self._group_alive():
            try:
                os.killpg(self.pgid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            deadline = time.monotonic() + self.term_timeout
            while time.monotonic() < deadline:
                self.proc.poll()
                if not self._group_alive():
                    break
                time.sleep(0.1)
            if self._group_alive():
                self.kill()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


def wait_for(what, probe, timeout, proc=None, interval=0.2):
    """Call probe() until it returns something true; fail naming `what` (and the log)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        if proc is not None:
            proc.check()
        try:
            value = probe()
            if value:
                return value
        except Exception as e:  # noqa: BLE001 - retried until the deadline
            last = e
        time.sleep(interval)
    msg = "%s: not ready after %ss (last error: %r)" % (what, timeout, last)
    if proc is not None:
        msg += "\n%s log (%s) ends:\n%s" % (proc.name, proc.log, tail(proc.log))
    raise RuntimeError(msg)


def http_status(url, timeout=3):
    """The HTTP status of GET url (any status, errors included)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def amqp_ready(port):
    """RabbitMQ answers the AMQP 0-9-1 protocol header with Connection.Start."""
    with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
        s.sendall(b"AMQP\x00\x00\x09\x01")
        s.settimeout(3)
        return s.recv(8)[:1] == b"\x01"  # a method frame
