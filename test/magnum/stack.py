"""The whole Magnum stack on 127.0.0.1, as real processes where it can be:

  real:        Keystone (python3-keystone, sqlite in WAL mode, keystone-wsgi-public),
               Glance (python3-glance, sqlite, file store, behind keystonemiddleware),
               RabbitMQ 3.10 (its own epmd), MariaDB, magnum-api and magnum-conductor
               (Debian's Magnum 15.0.1) with the driver shim installed as a wheel on their
               PYTHONPATH, `magnum-gitops serve` (MAGNUM_GITOPS_BIN) pushing to a real
               smart-HTTP Git remote (git http-backend, basic auth).
  stand-ins:   Nova, Neutron and Cinder (standins.py says why and what they answer).
  Flux + CAPI: by default a stand-in (fluxcapi.FluxCAPIStandIn, serve's --objects file);
               with E2E_MAGNUM_CAPI=1 the real controllers (management.ManagementCluster:
               real Flux, Cluster API v1.14.2 with CAPD's in-memory backend), which serve
               reads through a kubeconfig.

Recipes and traps: ../shared/docs/openstack-offline.md. Every process runs in its own
process group and is stopped with SIGTERM, then SIGKILL (procs.Process).
"""

import grp
import json
import os
import pwd
import secrets
import shutil
import ssl
import threading
import time
import urllib.request

# Imported here, in the main thread: these import eventlet, and a thread that first imports
# eventlet can never be joined (its thread state lock is never released).
from glanceclient import Client as GlanceClient
from keystoneauth1 import session as ks_session
from keystoneauth1.identity import v3 as ks_v3
from keystoneclient.v3 import client as ks_client
import pymysql
import yaml

from fluxcapi import FluxCAPIStandIn
from management import ManagementCluster
import pki
from gitserver import GitServer, USER as GIT_USER
from procs import PYTHON, Process, amqp_ready, free_port, http_status, run, wait_for
import shimtests
import standins

REGION = "RegionOne"
IMAGE = "ubuntu-2204-kube-v1.33.7"
IMAGE_NEW = "ubuntu-2204-kube-v1.34.2"
KEYPAIR = "operator-key"

# Glance's own keystone pipeline, minus the middleware a test does not need (the same as
# internal/testenv/keystone/glance.go).
GLANCE_PASTE = """[pipeline:glance-api-keystone]
pipeline = versionnegotiation authtoken context rootapp
[composite:rootapp]
paste.composite_factory = glance.api:root_app_factory
/: apiversions
/v2: apiv2app
[app:apiversions]
paste.app_factory = glance.api.versions:create_resource
[app:apiv2app]
paste.app_factory = glance.api.v2.router:API.factory
[filter:versionnegotiation]
paste.filter_factory = glance.api.middleware.version_negotiation:VersionNegotiationFilter.factory
[filter:context]
paste.filter_factory = glance.api.middleware.context:ContextMiddleware.factory
[filter:authtoken]
paste.filter_factory = keystonemiddleware.auth_token:filter_factory
delay_auth_decision = true
"""

GLANCE_CONF = """[DEFAULT]
bind_host = 127.0.0.1
bind_port = {port}
workers = 0
enabled_backends = fs:file
[database]
connection = sqlite:///{dir}/glance.db
[glance_store]
default_backend = fs
[fs]
filesystem_store_datadir = {dir}/images
[os_glance_staging_store]
filesystem_store_datadir = {dir}/staging
[os_glance_tasks_store]
filesystem_store_datadir = {dir}/tasks
[paste_deploy]
flavor = keystone
config_file = {dir}/glance-api-paste.ini
[keystone_authtoken]
{authtoken}
"""

# Magnum's own api-paste.ini (Debian's magnum-api installs it as /etc/magnum/api-paste.ini),
# without the health check's file path under /etc.
MAGNUM_PASTE = """[composite:main]
paste.composite_factory = magnum.api:root_app_factory
/: api
[pipeline:api]
pipeline = cors http_proxy_to_wsgi request_id osprofiler authtoken api_v1
[app:api_v1]
paste.app_factory = magnum.api.app:app_factory
[filter:authtoken]
acl_public_routes = /, /v1
paste.filter_factory = magnum.api.middleware.auth_token:AuthTokenMiddleware.factory
[filter:osprofiler]
paste.filter_factory = magnum.common.profiler:WsgiMiddleware.factory
[filter:request_id]
paste.filter_factory = oslo_middleware:RequestId.factory
[filter:cors]
paste.filter_factory = oslo_middleware.cors:filter_factory
oslo_config_project = magnum
[filter:http_proxy_to_wsgi]
paste.filter_factory = oslo_middleware.http_proxy_to_wsgi:HTTPProxyToWSGI.factory
oslo_config_project = magnum
"""

MAGNUM_CONF = """[DEFAULT]
host = e2e-magnum
transport_url = rabbit://guest:guest@127.0.0.1:{rabbit_port}/
state_path = {dir}/state
[api]
host = 127.0.0.1
port = {api_port}
workers = 1
api_paste_config = {dir}/api-paste.ini
[conductor]
workers = 1
[database]
connection = mysql+pymysql://magnum:{db_password}@127.0.0.1:{db_port}/magnum?charset=utf8
[oslo_messaging_notifications]
driver = noop
[oslo_concurrency]
lock_path = {dir}/locks
[certificates]
cert_manager_type = x509keypair
[keystone_auth]
{magnum_auth}
[keystone_authtoken]
{magnum_auth}
[trust]
trustee_domain_name = magnum
trustee_domain_admin_name = magnum_domain_admin
trustee_domain_admin_password = {domain_admin_password}
trustee_keystone_interface = public
[cinder_client]
region_name = {region}
[gitops]
endpoint = {serve_url}
ca_file = {serve_ca_file}
token_file = {serve_token_file}
"""


def authtoken(auth_url, user, password):
    return "\n".join([
        "www_authenticate_uri = " + auth_url, "auth_url = " + auth_url,
        "auth_type = password", "username = " + user, "password = " + password,
        "project_name = service", "user_domain_id = default", "project_domain_id = default",
        "region_name = " + REGION])


class Stack(object):
    """Brings everything up (start) and down (stop); the attributes are what tests use."""

    def __init__(self, workdir, serve_bin, driver_site):
        self.dir = workdir
        self.serve_bin = serve_bin
        self.driver_site = driver_site
        self.logs = os.path.join(workdir, "logs")
        os.makedirs(self.logs, exist_ok=True)
        self.procs = []
        self.passwords = {}
        self.timings = {}
        self.git = self.flux = None
        # Real Flux and Cluster API (management.py) instead of the stand-in (fluxcapi.py).
        self.capi = os.environ.get("E2E_MAGNUM_CAPI") == "1"
        # How much longer than with the stand-in an operation may take: real machines
        # (simulated by CAPD's in-memory backend) boot, roll and go one after another.
        self.patience = 6 if self.capi else 1
        self.standins = []

    # -- helpers ---------------------------------------------------------------------------

    def path(self, *parts):
        p = os.path.join(self.dir, *parts)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        return p

    def write(self, name, text, mode=0o600):
        p = self.path(name)
        with open(p, "w") as f:
            f.write(text)
        os.chmod(p, mode)
        return p

    def log(self, name):
        return os.path.join(self.logs, name + ".log")

    def log_count(self, name, text):
        """How many lines of a process's log contain text."""
        with open(self.log(name), errors="replace") as f:
            return sum(text in line for line in f)

    def spawn(self, name, args, **kw):
        p = Process(name, args, self.log(name), **kw)
        self.procs.append(p)
        return p

    def password(self, name):
        self.passwords[name] = secrets.token_hex(16)
        return self.passwords[name]

    def _timed(self, name, fn):
        start = time.monotonic()
        fn()
        self.timings[name] = time.monotonic() - start

    # -- bring-up ----------------------------------------------------------------------------

    def start(self):
        start = time.monotonic()
        errors = []

        def step(name, fn):
            try:
                self._timed(name, fn)
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append((name, e))

        # Keystone (then Glance), MariaDB and RabbitMQ come up side by side.
        threads = [threading.Thread(target=step, args=a) for a in (
            ("keystone+glance", self._identity_and_images),
            ("mariadb", self._mariadb), ("rabbitmq", self._rabbitmq))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise RuntimeError("bring-up failed in %s: %s" % (errors[0][0], errors[0][1])) \
                from errors[0][1]
        self._timed("git+serve", self._git_and_serve)
        self._timed("magnum", self._magnum)
        self.timings["total"] = time.monotonic() - start
        return self

    def stop(self):
        """Stops everything; raises if a process group survived."""
        failures = []
        if self.flux is not None:
            self.flux.stop()
        # Side by side: Magnum's processes and RabbitMQ each take seconds after SIGTERM.
        def stop(p):
            try:
                p.stop()
            except Exception as e:  # noqa: BLE001 - every process gets its stop
                failures.append(str(e))
        threads = [threading.Thread(target=stop, args=(p,)) for p in self.procs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for s in self.standins + ([self.git] if self.git else []):
            s.stop()
        if failures:
            raise RuntimeError("; ".join(failures))

    # Keystone ---------------------------------------------------------------------------

    def _identity_and_images(self):
        self._keystone()
        self._keystone_objects()
        # Magnum's endpoint is in the catalog before serve starts: serve looks for it once.
        self.magnum_port = free_port()
        self.magnum_url = "http://127.0.0.1:%d" % self.magnum_port
        self.register("container-infra", "magnum", self.magnum_url + "/v1")
        self._standins()
        self._glance()

    def _keystone(self):
        ks = shimtests.keystone
        d = os.path.join(self.dir, "keystone")
        for sub in ("fernet-keys", "credential-keys"):
            os.makedirs(os.path.join(d, sub), mode=0o700)
        conf = os.path.join(d, "keystone.conf")
        with open(conf, "w") as f:
            f.write(ks.CONF.format(dir=d))
        self.keystone_port = free_port()
        self.auth_url = "http://127.0.0.1:%d/v3" % self.keystone_port
        manage = [ks.MANAGE, "--config-file", conf]
        owner = ["--keystone-user", pwd.getpwuid(os.getuid()).pw_name,
                 "--keystone-group", grp.getgrgid(os.getgid()).gr_name]
        steps = [manage + ["fernet_setup"] + owner, manage + ["credential_setup"] + owner,
                 manage + ["db_sync"]]
        errs = []
        ts = [threading.Thread(target=lambda a=a: self._collect(errs, run, a, cwd=d))
              for a in steps]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        if errs:
            raise errs[0]
        # WAL, or writes fail with "database is locked"; and the cascade sqlite ignores.
        run([PYTHON, "-c", ks.SQLITE_FIXUPS, os.path.join(d, "keystone.db")])
        admin_pw = self.password("admin")
        # The password reaches keystone-manage through its environment, not its arguments.
        run(manage + ["bootstrap", "--bootstrap-username", "admin",
                      "--bootstrap-project-name", "admin",
                      "--bootstrap-admin-url", self.auth_url,
                      "--bootstrap-public-url", self.auth_url,
                      "--bootstrap-internal-url", self.auth_url,
                      "--bootstrap-region-id", REGION], cwd=d,
            env=dict(os.environ, OS_BOOTSTRAP_PASSWORD=admin_pw))
        self.keystone = self.spawn(
            "keystone", [ks.WSGI, "--host", "127.0.0.1", "--port", str(self.keystone_port)],
            env=dict(os.environ, OS_KEYSTONE_CONFIG_DIR=d), cwd=d, term_timeout=5)
        wait_for("keystone", lambda: http_status(self.auth_url) == 200, 60, self.keystone)

    @staticmethod
    def _collect(errs, fn, *a, **kw):
        try:
            fn(*a, **kw)
        except Exception as e:  # noqa: BLE001
            errs.append(e)

    def session(self, user="admin", project="admin", domain="default"):
        auth = ks_v3.Password(auth_url=self.auth_url, username=user,
                           password=self.passwords[user], user_domain_id=domain,
                           project_name=project, project_domain_id="default")
        return ks_session.Session(auth=auth, timeout=60)

    def identity(self):
        return ks_client.Client(session=self.session(), interface="public", region_name=REGION)

    def _keystone_objects(self):
        """Projects, users, the trustee domain and its admin, as a deployment has them."""
        kc = self.identity()
        self.kc = kc
        roles = {r.name: r for r in kc.roles.list()}
        default = "default"
        self.projects = {}
        for name in ("service", "demo", "tempest"):
            self.projects[name] = kc.projects.create(name, default)
        self.users = {}
        for name, project, role in (
                ("magnum", "service", "admin"), ("glance", "service", "admin"),
                ("magnum-gitops", "service", "admin"),  # serve's openstack: section
                ("demo", "demo", "member"), ("tempest", "tempest", "member")):
            u = kc.users.create(name, domain=default, password=self.password(name),
                                default_project=self.projects[project])
            kc.roles.grant(roles[role], user=u, project=self.projects[project])
            self.users[name] = u
        self.trustee_domain = kc.domains.create("magnum", description="Magnum trustees")
        u = kc.users.create("magnum_domain_admin", domain=self.trustee_domain,
                            password=self.password("magnum_domain_admin"))
        kc.roles.grant(roles["admin"], user=u, domain=self.trustee_domain)
        self.users["magnum_domain_admin"] = u
        self.roles = roles

    def register(self, service_type, name, url):
        svc = self.kc.services.create(name, service_type)
        for interface in ("public", "internal", "admin"):
            self.kc.endpoints.create(svc, url, interface=interface, region=REGION)

    # stand-ins ------------------------------------------------------------------------------

    def _standins(self):
        check = standins.TokenChecker(self.session())
        log = self.log("standins")
        self.nova = standins.Nova(check, log)
        self.neutron = standins.Neutron(check, log)
        self.cinder = standins.Cinder(check, log)
        self.standins = [self.nova, self.neutron, self.cinder]
        self.register("compute", "nova", self.nova.url)
        self.register("network", "neutron", self.neutron.url)
        self.register("block-storage", "cinder", self.cinder.url)
        self.nova.add_keypair(KEYPAIR, self.users["demo"].id)

    # Glance --------------------------------------------------------------------------------

    def _glance(self):
        d = os.path.join(self.dir, "glance")
        os.makedirs(d)
        port = free_port()
        self.glance_url = "http://127.0.0.1:%d" % port
        with open(os.path.join(d, "glance-api-paste.ini"), "w") as f:
            f.write(GLANCE_PASTE)
        conf = self.write("glance/glance-api.conf", GLANCE_CONF.format(
            dir=d, port=port,
            authtoken=authtoken(self.auth_url, "glance", self.passwords["glance"])))
        entry = "import sys; from glance.cmd.%s import main; sys.exit(main())"
        run([PYTHON, "-c", entry % "manage", "--config-file", conf, "db_sync"], cwd=d)
        self.glance = self.spawn("glance-api", [PYTHON, "-c", entry % "api", "--config-file",
                                                conf], cwd=d)
        wait_for("glance", lambda: http_status(self.glance_url + "/") == 300, 90, self.glance)
        self.register("image", "glance", self.glance_url)
        gc = GlanceClient("2", session=self.session(), interface="public", region_name=REGION)
        self.images = {}
        for name, version in ((IMAGE, "v1.33.7"), (IMAGE_NEW, "v1.34.2")):
            img = gc.images.create(name=name, disk_format="qcow2", container_format="bare",
                                   visibility="public", os_distro="ubuntu",
                                   kube_version=version)
            self.images[name] = img["id"]

    # MariaDB -------------------------------------------------------------------------------

    def _mariadb(self):
        d = os.path.join(self.dir, "mariadb")
        os.makedirs(d)
        data = os.path.join(d, "data")
        self.db_socket = os.path.join(d, "mysqld.sock")
        run(["mariadb-install-db", "--no-defaults", "--datadir=" + data,
             "--auth-root-authentication-method=normal", "--skip-test-db", "--user=root"],
            cwd=d)
        self.db_port = free_port()
        self.mariadb = self.spawn("mariadb", [
            "/usr/sbin/mariadbd", "--no-defaults", "--datadir=" + data,
            "--socket=" + self.db_socket, "--port=%d" % self.db_port,
            "--bind-address=127.0.0.1", "--user=root", "--skip-name-resolve",
            "--pid-file=" + os.path.join(d, "mysqld.pid"), "--tmpdir=" + d,
            "--innodb-buffer-pool-size=64M", "--skip-log-bin"], cwd=d, term_timeout=20)
        wait_for("mariadb", lambda: os.path.exists(self.db_socket) and self._root_db(), 60,
                 self.mariadb)
        pw = self.password("magnum-db")
        with self._root_db() as db:
            c = db.cursor()
            c.execute("CREATE DATABASE magnum CHARACTER SET utf8")
            c.execute("CREATE USER 'magnum'@'%%' IDENTIFIED BY %s", (pw,))
            c.execute("GRANT ALL PRIVILEGES ON magnum.* TO 'magnum'@'%'")

    def _root_db(self):
        return pymysql.connect(unix_socket=self.db_socket, user="root", autocommit=True)

    def db(self):
        """A connection to Magnum's database (the test reads Magnum's rows with it)."""
        return pymysql.connect(host="127.0.0.1", port=self.db_port, user="magnum",
                               password=self.passwords["magnum-db"], database="magnum",
                               autocommit=True, cursorclass=pymysql.cursors.DictCursor)

    def query(self, sql, *args):
        with self.db() as db:
            c = db.cursor()
            c.execute(sql, args)
            return c.fetchall()

    # RabbitMQ ------------------------------------------------------------------------------

    def _rabbitmq(self):
        d = os.path.join(self.dir, "rabbitmq")
        for sub in ("home", "mnesia", "log"):
            os.makedirs(os.path.join(d, sub))
        self.rabbit_port, dist_port, epmd_port = free_port(), free_port(), free_port()
        # Our own epmd, in our process group: RabbitMQ would otherwise start a daemonised one
        # that outlives everything.
        self.epmd = self.spawn("epmd", ["epmd", "-port", str(epmd_port), "-address",
                                        "127.0.0.1"], term_timeout=5)
        with open(os.path.join(d, "rabbitmq.conf"), "w") as f:
            f.write("listeners.tcp.default = 127.0.0.1:%d\nloopback_users = none\n"
                    % self.rabbit_port)
        with open(os.path.join(d, "enabled_plugins"), "w") as f:
            f.write("[].\n")
        env = dict(os.environ, HOME=os.path.join(d, "home"),
                   RABBITMQ_NODENAME="e2e@localhost", RABBITMQ_NODE_IP_ADDRESS="127.0.0.1",
                   RABBITMQ_NODE_PORT=str(self.rabbit_port),
                   RABBITMQ_DIST_PORT=str(dist_port),
                   RABBITMQ_CONFIG_FILE=os.path.join(d, "rabbitmq.conf"),
                   RABBITMQ_ENABLED_PLUGINS_FILE=os.path.join(d, "enabled_plugins"),
                   RABBITMQ_MNESIA_BASE=os.path.join(d, "mnesia"),
                   RABBITMQ_LOG_BASE=os.path.join(d, "log"),
                   RABBITMQ_LOGS="-", RABBITMQ_PID_FILE=os.path.join(d, "rabbit.pid"),
                   ERL_EPMD_PORT=str(epmd_port), ERL_EPMD_ADDRESS="127.0.0.1",
                   RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface "
                                                       "{127,0,0,1}")
        wait_for("epmd", lambda: self._tcp(epmd_port), 10, self.epmd)
        self.rabbitmq = self.spawn("rabbitmq", ["/usr/lib/rabbitmq/bin/rabbitmq-server"],
                                   env=env, cwd=d, term_timeout=15)
        wait_for("rabbitmq", lambda: amqp_ready(self.rabbit_port), 90, self.rabbitmq, 0.5)

    @staticmethod
    def _tcp(port):
        import socket
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True

    # Git and serve -------------------------------------------------------------------------

    def _git_and_serve(self):
        os.makedirs(os.path.join(self.dir, "git"))
        self.git = GitServer(os.path.join(self.dir, "git"), self.password("git"),
                             self.log("git-http"))
        d = os.path.join(self.dir, "serve")
        os.makedirs(d)
        git_pw = self.write("serve/git-password", self.passwords["git"] + "\n")
        self.serve_token = self.password("serve-token")
        self.serve_token_file = self.write("serve/token", self.serve_token + "\n")
        self.age_key = os.path.join(d, "age.key")
        run(["age-keygen", "-o", self.age_key])
        with open(self.age_key) as f:
            recipient = next(ln.split()[-1] for ln in f if ln.startswith("# public key:"))
        digest = self.write("serve/digest.key", secrets.token_hex(32) + "\n")
        clouds = self.write("serve/clouds.yaml", yaml.safe_dump({"clouds": {"magnum-gitops": {
            "auth": {"auth_url": self.auth_url, "username": "magnum-gitops",
                     "password": self.passwords["magnum-gitops"], "project_name": "service",
                     "user_domain_name": "Default", "project_domain_name": "Default"},
            "region_name": REGION, "interface": "public", "identity_api_version": 3}}}))
        self.serve_port, self.ops_port = free_port(), free_port()
        # The event API over TLS, as deployed (docs/service.md): a CA the shim trusts
        # ([gitops] ca_file) issued serve's certificate; /readyz and /metrics on the plain
        # ops listener.
        os.makedirs(os.path.join(d, "tls"))
        self.serve_ca = pki.CA("magnum-gitops e2e CA")
        self.serve_ca_file = self.serve_ca.write(os.path.join(d, "tls", "ca.crt"))
        cert, key = self.serve_ca.issue(os.path.join(d, "tls", "tls.crt"), os.path.join(d, "tls", "tls.key"))
        self.wrong_ca_file = pki.CA("another CA").write(os.path.join(d, "tls", "wrong-ca.crt"))
        self.serve_tls = ssl.create_default_context(cafile=self.serve_ca_file)
        self.serve_url = "https://127.0.0.1:%d" % self.serve_port
        self.ops_url = "http://127.0.0.1:%d" % self.ops_port
        self.objects_file = os.path.join(d, "objects.yaml")
        config = {
            "git": {"url": self.git.url, "auth": {"username": GIT_USER,
                                                  "password_file": git_pw},
                    "author": {"name": "magnum-gitops", "email": "magnum-gitops@e2e.invalid"}},
            "sops": {"age_recipients": [recipient], "digest_key_file": digest},
            "serve": {"listen": "127.0.0.1:%d" % self.serve_port,
                      "ops_listen": "127.0.0.1:%d" % self.ops_port,
                      "tls": {"cert_file": cert, "key_file": key},
                      "token_files": [self.serve_token_file]},
            "openstack": {"cloud": "magnum-gitops", "clouds_file": clouds, "region": REGION},
        }
        if self.capi:
            self.flux = ManagementCluster(self, self.git, git_pw, self.age_key)
            config = self.flux.serve_config(config)
            status_source = ["--kubeconfig", self.flux.kubeconfig]
        else:
            self.flux = FluxCAPIStandIn(self.git, self.objects_file)
            status_source = ["--objects", self.objects_file]
        self.serve_config = self.write("serve/config.yaml", yaml.safe_dump(config))
        self.serve_log = self.log("serve")
        self.serve = self.spawn("serve", [
            self.serve_bin, "serve", "--config", self.serve_config] + status_source + [
            "--log-format", "json", "--resync-interval", "0", "--health-interval", "5s",
            "--shutdown-delay", "0s"], cwd=d, term_timeout=40,
            # serve's clone (no git.cache_dir) goes to $TMPDIR: a killed serve leaves it in
            # the stack's directory, not in /tmp.
            env=dict(os.environ, TMPDIR=d))
        self._wait_serve()

    def _wait_serve(self):
        # /readyz: the Git remote answered and the status source synced.
        wait_for("serve", lambda: http_status(self.ops_url + "/readyz") == 200, 60,
                 self.serve, 0.1)

    def serve_get(self, path):
        req = urllib.request.Request(self.serve_url + path,
                                     headers={"Authorization": "Bearer " + self.serve_token})
        try:
            with urllib.request.urlopen(req, timeout=10, context=self.serve_tls) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def serve_status(self, uuid):
        code, body = self.serve_get("/v1/clusters/%s/status" % uuid)
        return json.loads(body) if code == 200 else None

    def serve_events(self):
        """serve's JSON log lines about events ("event applied"/"event refused")."""
        out = []
        with open(self.serve_log, errors="replace") as f:
            for line in f:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if rec.get("msg") in ("event applied", "event refused"):
                    out.append(rec)
        return out

    def refused_updates(self, user):
        """The cluster updates of `user` Magnum's conductor refused, from its log: Magnum 15
        answers a PATCH 202 and casts it; the conductor then refuses any cluster not in a
        *_COMPLETE status, writing nothing (the caller never hears of it)."""
        out, request = [], None
        with open(self.log("magnum-conductor"), errors="replace") as f:
            for line in f:
                if "Exception during message handling" in line:
                    request = line
                elif "NotSupported: Updating a cluster when status is" in line and request \
                        and (" %s " % self.users[user].id) in request:
                    out.append(line.split("NotSupported: ", 1)[1].strip())
        return out

    def metrics(self):
        with urllib.request.urlopen(self.ops_url + "/metrics", timeout=10) as r:
            return r.read().decode()

    # Magnum --------------------------------------------------------------------------------

    def _magnum(self):
        d = os.path.join(self.dir, "magnum")
        os.makedirs(os.path.join(d, "state"))
        os.makedirs(os.path.join(d, "locks"))
        with open(os.path.join(d, "api-paste.ini"), "w") as f:
            f.write(MAGNUM_PASTE)
        self.magnum_conf = self.write("magnum/magnum.conf", MAGNUM_CONF.format(
            dir=d, rabbit_port=self.rabbit_port, api_port=self.magnum_port,
            db_password=self.passwords["magnum-db"], db_port=self.db_port,
            magnum_auth=authtoken(self.auth_url, "magnum", self.passwords["magnum"]),
            domain_admin_password=self.passwords["magnum_domain_admin"], region=REGION,
            serve_url=self.serve_url, serve_ca_file=self.serve_ca_file,
            serve_token_file=self.serve_token_file))
        conf = ["--config-file", self.magnum_conf]
        run(["/usr/bin/magnum-db-manage"] + conf + ["upgrade"], cwd=d)
        # The shim, installed from its wheel into driver_site, is on both processes' path.
        env = dict(os.environ, PYTHONPATH=self.driver_site)
        drivers = run(["/usr/bin/magnum-driver-manage", "list-drivers", "-d"], env=env)
        if "k8s_gitops_v1" not in drivers:
            raise RuntimeError("magnum-driver-manage does not list k8s_gitops_v1:\n" + drivers)
        self.magnum_api = self.spawn("magnum-api", ["/usr/bin/magnum-api"] + conf, env=env,
                                     cwd=d, term_timeout=10)
        self.conductor = self.spawn("magnum-conductor", ["/usr/bin/magnum-conductor"] + conf,
                                    env=env, cwd=d, term_timeout=10)
        wait_for("magnum-api", lambda: http_status(self.magnum_url + "/v1") == 200, 60,
                 self.magnum_api)
        wait_for("magnum-conductor", lambda: self.query(
            "SELECT id FROM magnum_service WHERE `binary` = 'magnum-conductor'"), 60,
            self.conductor, 0.5)

    # Faults ------------------------------------------------------------------------------

    def _again(self, proc):
        """proc's command started again, in proc's place in the stack."""
        new = proc.again()
        self.procs[self.procs.index(proc)] = new
        return new

    def kill_serve(self):
        """SIGKILL to serve: no shutdown handler runs, nothing is flushed."""
        self.serve.kill()

    def start_serve_again(self):
        """serve with the same configuration (its repository read from the remote again)."""
        self.serve = self._again(self.serve)
        self._wait_serve()

    def trust_ca(self, ca_file):
        """magnum.conf's [gitops] ca_file set to ca_file, and the conductor restarted to
        read it (the shim reads its options once, at start, as every Magnum driver)."""
        with open(self.magnum_conf) as f:
            lines = f.read().splitlines(True)
        with open(self.magnum_conf, "w") as f:
            f.writelines("ca_file = %s\n" % ca_file if ln.startswith("ca_file = ") else ln
                         for ln in lines)
        self.restart_conductor()

    def restart_conductor(self, kill=False):
        """magnum-conductor stopped (SIGTERM, or SIGKILL) and started again; returns once
        it reported itself alive in Magnum's database after the restart."""
        (self.conductor.kill if kill else self.conductor.stop)()
        count = "SELECT report_count FROM magnum_service WHERE `binary` = 'magnum-conductor'"
        before = self.query(count)[0]["report_count"]
        self.conductor = self._again(self.conductor)
        # Its first report runs at start (run_immediately), before it consumes messages.
        wait_for("magnum-conductor", lambda: self.query(count)[0]["report_count"] > before,
                 60, self.conductor, 0.5)

    def restart_rabbitmq(self):
        """RabbitMQ stopped (SIGTERM) and started again on the same port, node and data."""
        self.rabbitmq.stop()
        self.rabbitmq = self._again(self.rabbitmq)
        wait_for("rabbitmq", lambda: amqp_ready(self.rabbit_port), 90, self.rabbitmq, 0.5)

    def clean_up_workdir(self):
        shutil.rmtree(self.dir, ignore_errors=True)
