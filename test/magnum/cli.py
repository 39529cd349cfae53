"""The real OpenStack CLI (python3-openstackclient + python3-magnumclient), as an operator
runs it: credentials in OS_* variables (never in the arguments), JSON output where the
command has one."""

import json
import os
import re
import subprocess
import time

OPENSTACK = "/usr/bin/openstack"


class CLIError(AssertionError):
    pass


def parse(out):
    """JSON output, after any line the command prints first ("Request to ... accepted");
    the text itself when there is none."""
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(("{", "[")):
            try:
                return json.loads("\n".join(lines[i:]))
            except ValueError:
                break
    return out


class OpenStackCLI(object):

    def __init__(self, stack, user, project, log):
        self.log = log
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
        # `coe cluster config` prints an export line for the caller's shell and reads
        # $SHELL unguarded (KeyError 'SHELL'); a login shell sets it, CI's runner does not.
        self.env.setdefault("SHELL", "/bin/bash")
        self.env.update(OS_AUTH_URL=stack.auth_url, OS_IDENTITY_API_VERSION="3",
                        OS_USERNAME=user, OS_PASSWORD=stack.passwords[user],
                        OS_PROJECT_NAME=project, OS_USER_DOMAIN_NAME="Default",
                        OS_PROJECT_DOMAIN_NAME="Default", OS_REGION_NAME="RegionOne",
                        OS_INTERFACE="public")
        self.calls = []  # (args, seconds)

    def run(self, *args, timeout=120):
        """(exit code, stdout, stderr) of `openstack ARGS`."""
        start = time.monotonic()
        p = subprocess.run([OPENSTACK] + list(args), env=self.env, capture_output=True,
                           text=True, timeout=timeout)
        took = time.monotonic() - start
        self.calls.append((args, took))
        with open(self.log, "a") as f:
            f.write("$ openstack %s  # exit %d, %.1fs\n%s%s\n" % (
                " ".join(args), p.returncode, took, p.stdout, p.stderr))
        return p.returncode, p.stdout, p.stderr

    def __call__(self, *args, timeout=120):
        """stdout of a command that must succeed (parsed when it is JSON)."""
        rc, out, err = self.run(*args, timeout=timeout)
        if rc != 0:
            raise CLIError("openstack %s exited %d: %s" % (" ".join(args), rc,
                                                           (err or out).strip()[-2000:]))
        return parse(out)

    def fails(self, *args, timeout=120):
        """The error output of a command that must fail."""
        rc, out, err = self.run(*args, timeout=timeout)
        if rc == 0:
            raise CLIError("openstack %s succeeded, expected a refusal:\n%s"
                           % (" ".join(args), out))
        return (err + out).strip()

    @staticmethod
    def accepted_uuid(out):
        """The uuid in 'Request to create cluster <uuid> accepted'."""
        m = re.search(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", out)
        if not m:
            raise CLIError("no uuid in the CLI's answer: %r" % out)
        return m.group(0)
