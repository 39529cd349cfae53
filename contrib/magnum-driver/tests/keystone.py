"""A real Keystone (Debian's python3-keystone) on loopback, for application credentials.

Everything lives in one temporary directory: sqlite database, fernet and credential keys,
log. Served by keystone-wsgi-public (single-threaded wsgiref), as in
/work/shared/docs/openstack-offline.md and the service's Go harness.
"""

import grp
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request

from tests.service import free_port

MANAGE = "/usr/bin/keystone-manage"
WSGI = "/usr/bin/keystone-wsgi-public"

CONF = """[DEFAULT]
log_file = {dir}/keystone.log
[database]
connection = sqlite:///{dir}/keystone.db
[identity]
password_hash_rounds = 4
[token]
provider = fernet
[fernet_tokens]
key_repository = {dir}/fernet-keys
[fernet_receipts]
key_repository = {dir}/fernet-keys
[credential]
key_repository = {dir}/credential-keys
"""

# sqlite ignores ON DELETE CASCADE unless enabled per connection; Keystone relies on it when
# application credentials are deleted. WAL avoids "database is locked" between requests.
SQLITE_FIXUPS = """import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("PRAGMA journal_mode=WAL").fetchall()
for table in ("application_credential_role", "application_credential_access_rule"):
    db.execute("CREATE TRIGGER cascade_" + table + " AFTER DELETE ON application_credential "
               "BEGIN DELETE FROM " + table + " WHERE application_credential_id = "
               "OLD.internal_id; END")
db.commit()
"""


def available():
    return os.access(MANAGE, os.X_OK) and os.access(WSGI, os.X_OK)


class Keystone(object):

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="keystone-driver-test-")
        self.port = free_port()
        self.auth_url = "http://127.0.0.1:%d/v3" % self.port
        self.region = "RegionOne"
        self.admin_password = secrets.token_hex(16)
        self.proc = None

    def _manage(self, *args):
        subprocess.run([MANAGE, "--config-file", self.conf] + list(args), check=True,
                       capture_output=True, cwd=self.dir, timeout=300)

    def start(self, timeout=60):
        for d in ("fernet-keys", "credential-keys"):
            os.mkdir(os.path.join(self.dir, d), 0o700)
        self.conf = os.path.join(self.dir, "keystone.conf")
        with open(self.conf, "w") as f:
            f.write(CONF.format(dir=self.dir))
        owner = ["--keystone-user", pwd.getpwuid(os.getuid()).pw_name,
                 "--keystone-group", grp.getgrgid(os.getgid()).gr_name]
        errors = []

        def step(*args):
            try:
                self._manage(*args)
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=step, args=a) for a in
                   (("fernet_setup",) + tuple(owner), ("credential_setup",) + tuple(owner),
                    ("db_sync",))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        subprocess.run(["/usr/bin/python3", "-c", SQLITE_FIXUPS,
                        os.path.join(self.dir, "keystone.db")], check=True)
        self._manage("bootstrap", "--bootstrap-username", "admin",
                     "--bootstrap-password", self.admin_password,
                     "--bootstrap-project-name", "admin",
                     "--bootstrap-admin-url", self.auth_url,
                     "--bootstrap-public-url", self.auth_url,
                     "--bootstrap-internal-url", self.auth_url,
                     "--bootstrap-region-id", self.region)
        env = dict(os.environ, OS_KEYSTONE_CONFIG_DIR=self.dir)
        log = open(os.path.join(self.dir, "wsgi.log"), "w")
        self.proc = subprocess.Popen([WSGI, "--host", "127.0.0.1", "--port", str(self.port)],
                                     cwd=self.dir, env=env, stdout=log, stderr=log,
                                     start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("keystone exited %s" % self.proc.returncode)
            try:
                with urllib.request.urlopen(self.auth_url, timeout=2) as r:
                    if r.status == 200:
                        return self
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError("keystone did not answer at %s" % self.auth_url)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.proc = None
        shutil.rmtree(self.dir, ignore_errors=True)

    def session(self, password=None, app_cred=None, username="admin"):
        """A keystoneauth session on project admin: a user's (the admin's by default) or
        an app credential's."""
        from keystoneauth1.identity import v3
        from keystoneauth1 import session
        if app_cred:
            auth = v3.ApplicationCredential(auth_url=self.auth_url,
                                            application_credential_id=app_cred[0],
                                            application_credential_secret=app_cred[1])
        else:
            auth = v3.Password(auth_url=self.auth_url, username=username,
                               password=password or self.admin_password,
                               user_domain_id="default", project_name="admin",
                               project_domain_id="default")
        return session.Session(auth=auth)

    def create_member(self, name):
        """A new user with the member role on project admin; returns its password."""
        from keystoneclient.v3 import client as kc_v3
        admin = kc_v3.Client(session=self.session())
        password = secrets.token_hex(16)
        user = admin.users.create(name=name, domain="default", password=password)
        project = admin.projects.find(name="admin")
        role = admin.roles.find(name="member")
        admin.roles.grant(role, user=user, project=project)
        return password
