"""Stand-ins for Nova, Neutron and Cinder: the only OpenStack services of the stack that are
not the real thing.

Why stand-ins: Nova, Neutron and Cinder need hypervisors, network agents and storage back
ends that cannot run on this machine, and nothing in this suite boots a server or a volume:
Magnum (API and conductor), the driver shim and tempest only *look things up* (a flavor, a
keypair, the external network, a subnet, the volume types) and tempest creates and deletes
one keypair. Each stand-in answers exactly those requests, in the shapes the real clients
(novaclient, neutronclient, cinderclient, tempest's compute client) accept, as recorded in
../shared/docs/openstack-offline.md ("What Magnum and the shim ask Nova, Neutron and
Cinder", and tempest's trap 3). Every request must carry a token that the real Keystone
validates; anything else is answered 404 and logged, so an unexpected request shows up.

Responses close the connection (a kept-alive stand-in dropped some of tempest's POSTs).
"""

import http.server
import json
import threading
import time
import urllib.parse
import uuid as uuidlib

from procs import free_port

FLAVORS = [  # name, vcpus, ram MB, disk GB
    ("m1.tiny", 1, 512, 1),  # too small for Kubernetes: serve refuses it
    ("m1.small", 1, 2048, 20),
    ("m1.medium", 2, 4096, 40),
    ("m1.large", 4, 8192, 80),
    ("g1.a100", 8, 65536, 100),
]
EXTERNAL_NETWORK = {"name": "public", "id": "4bd6a9b2-4d0a-4b7e-9f8e-0b4b2f3c9e01"}
FIXED_NETWORK = {"name": "private", "id": "7c1e5d3a-2b6f-4c8d-9e0a-1f2b3c4d5e6f"}
FIXED_SUBNET = {"name": "private-subnet", "id": "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"}
VOLUME_TYPES = ["__DEFAULT__", "ssd"]
FINGERPRINT = "3a:1b:2c:4d:5e:6f:70:81:92:a3:b4:c5:d6:e7:f8:09"


def _flavor(i, name, vcpus, ram, disk):
    fid = "%d" % (i + 1)
    return {"id": fid, "name": name, "vcpus": vcpus, "ram": ram, "disk": disk, "swap": "",
            "OS-FLV-EXT-DATA:ephemeral": 0, "OS-FLV-DISABLED:disabled": False,
            "os-flavor-access:is_public": True, "rxtx_factor": 1.0,
            "links": [{"rel": "self", "href": "flavors/" + fid}]}


def _network(net, external):
    return {"id": net["id"], "name": net["name"], "status": "ACTIVE", "admin_state_up": True,
            "router:external": external, "shared": external, "subnets": [],
            "tenant_id": "", "project_id": "", "mtu": 1500}


class TokenChecker(object):
    """Validates tokens with the real Keystone (GET /v3/auth/tokens), caching the answer."""

    def __init__(self, admin_session):
        self.session = admin_session
        self.valid = {}
        self.lock = threading.Lock()

    def __call__(self, token):
        if not token:
            return None
        with self.lock:
            if token in self.valid:
                return self.valid[token]
        r = self.session.get("/auth/tokens", endpoint_filter={"service_type": "identity",
                                                             "interface": "public"},
                             headers={"X-Subject-Token": token}, raise_exc=False)
        if r.status_code != 200:
            return None
        user = r.json()["token"]["user"]["id"]
        with self.lock:
            self.valid[token] = user
        return user


class StandIn(object):
    """One stand-in service on its own port; `route` answers (status, body) or None."""

    def __init__(self, service, check_token, log):
        self.service = service
        self.check_token = check_token
        self.log = log
        self.requests = []  # (time, method, path, user agent)
        self.delays = {}    # path prefix -> seconds to wait before answering
        self.unexpected = []  # requests no route answered
        self.lock = threading.Lock()
        self.port = free_port()
        self.base = "http://127.0.0.1:%d" % self.port
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), self._handler())
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, name=service, daemon=True).start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def route(self, method, path, query, body, user):
        raise NotImplementedError

    def version_document(self):
        """The unauthenticated GET / of the service, None when the clients ask for none."""
        return None

    def _handler(self):
        svc = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, fmt, *args):
                with open(svc.log, "a") as f:
                    f.write("%s %s %s\n" % (time.strftime("%H:%M:%S"), svc.service,
                                            fmt % args))

            def _answer(self, status, body):
                data = b"" if body is None else json.dumps(body).encode()
                self.send_response(status)
                if body is not None:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                self.send_header("X-Openstack-Request-Id", "req-" + str(uuidlib.uuid4()))
                self.end_headers()
                self.wfile.write(data)

            def _serve(self):
                u = urllib.parse.urlsplit(self.path)
                query = urllib.parse.parse_qs(u.query)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                with svc.lock:
                    svc.requests.append((time.time(), self.command, self.path,
                                         self.headers.get("User-Agent", "")))
                    delay = max([s for p, s in svc.delays.items() if u.path.startswith(p)]
                                or [0])
                if self.command == "GET" and u.path.rstrip("/") == "":
                    doc = svc.version_document()
                    if doc is not None:  # unauthenticated, as the real services serve it
                        return self._answer(200, doc)
                user = svc.check_token(self.headers.get("X-Auth-Token"))
                if user is None:
                    return self._answer(401, {"error": {"code": 401,
                                                        "message": "token refused"}})
                if delay:
                    time.sleep(delay)
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    return self._answer(400, {"badRequest": {"message": "not JSON"}})
                answer = svc.route(self.command, u.path, query, body, user)
                if answer is None:
                    self.log_message("UNEXPECTED %s %s (answered 404)", self.command, self.path)
                    with svc.lock:
                        svc.unexpected.append("%s %s" % (self.command, self.path))
                    return self._answer(404, {"itemNotFound": {"code": 404, "message":
                                                               "not in the stand-in"}})
                self._answer(*answer)

            do_GET = do_POST = do_DELETE = do_PUT = _serve

        return Handler


class Nova(StandIn):
    """Compute v2.1: flavors (list, detail, one) and keypairs (get, create, delete)."""

    def __init__(self, check_token, log):
        super(Nova, self).__init__("nova", check_token, log)
        self.url = self.base + "/v2.1"
        self.flavors = [_flavor(i, *f) for i, f in enumerate(FLAVORS)]
        self.keypairs = {}

    def add_keypair(self, name, user_id):
        self.keypairs[name] = {"name": name, "user_id": user_id, "fingerprint": FINGERPRINT,
                               "public_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGl0c2Egc3Rh"
                               "bmQtaW4ga2V5IGZvciB0ZXN0cw== %s" % name}

    def route(self, method, path, query, body, user):
        if not path.startswith("/v2.1"):
            return None
        path = path[len("/v2.1"):]
        if method == "GET" and path in ("/flavors", "/flavors/detail"):
            return 200, {"flavors": self.flavors}
        if method == "GET" and path.startswith("/flavors/"):
            ref = path.split("/")[2]
            for f in self.flavors:
                if ref in (f["id"], f["name"]):
                    return 200, {"flavor": f}
            return 404, {"itemNotFound": {"code": 404, "message": "Flavor %s could not be "
                                          "found." % ref}}
        if path.startswith("/os-keypairs/"):
            name = urllib.parse.unquote(path.split("/")[2])
            kp = self.keypairs.get(name)
            if kp is None:
                return 404, {"itemNotFound": {"code": 404, "message": "Keypair %s not found "
                                              "for user %s" % (name, user)}}
            if method == "GET":
                return 200, {"keypair": dict(kp, id=1, deleted=False, type="ssh",
                                             created_at="2026-01-01T00:00:00.000000",
                                             updated_at=None, deleted_at=None)}
            if method == "DELETE":
                del self.keypairs[name]
                return 202, None  # no body: tempest refuses {}
        if method == "POST" and path == "/os-keypairs":
            name = ((body or {}).get("keypair") or {}).get("name")
            if not name:
                return 400, {"badRequest": {"code": 400, "message": "keypair name missing"}}
            if name in self.keypairs:
                return 409, {"conflictingRequest": {"code": 409, "message": "Key pair '%s' "
                                                    "already exists." % name}}
            self.add_keypair(name, user)
            # The v2.1 schema tempest checks refuses `type` here.
            return 200, {"keypair": dict(self.keypairs[name], private_key=(
                "-----BEGIN OPENSSH PRIVATE KEY-----\nstand-in, not a key\n"
                "-----END OPENSSH PRIVATE KEY-----\n"))}
        return None


class Neutron(StandIn):
    """Networking v2.0: the version document, networks and subnets, filtered by name, id
    and router:external."""

    def __init__(self, check_token, log):
        super(Neutron, self).__init__("neutron", check_token, log)
        self.url = self.base
        self.networks = [_network(EXTERNAL_NETWORK, True), _network(FIXED_NETWORK, False)]
        self.networks[1]["subnets"] = [FIXED_SUBNET["id"]]
        self.subnets = [{"id": FIXED_SUBNET["id"], "name": FIXED_SUBNET["name"],
                         "network_id": FIXED_NETWORK["id"], "cidr": "10.0.0.0/24",
                         "ip_version": 4, "enable_dhcp": True, "tenant_id": "",
                         "project_id": ""}]

    def version_document(self):
        # gophercloud's NewNetworkV2 checks the endpoint serves v2.0 (the Go resolver of
        # migrate --source magnum, for events without resolved facts).
        return {"versions": [{"id": "v2.0", "status": "CURRENT",
                              "links": [{"rel": "self", "href": self.base + "/v2.0/"}]}]}

    @staticmethod
    def _match(items, query):
        out = []
        for item in items:
            ok = True
            for k, vals in query.items():
                if k in ("fields", "limit", "marker"):
                    continue
                v = item.get(k)
                if isinstance(v, bool):
                    v = str(v)
                if str(v).lower() not in [x.lower() for x in vals]:
                    ok = False
            if ok:
                out.append(item)
        return out

    def route(self, method, path, query, body, user):
        if method != "GET":
            return None
        path = path.rstrip("/")
        if path == "/v2.0/networks":
            return 200, {"networks": self._match(self.networks, query)}
        if path == "/v2.0/subnets":
            return 200, {"subnets": self._match(self.subnets, query)}
        for kind, items in (("network", self.networks), ("subnet", self.subnets)):
            prefix = "/v2.0/%ss/" % kind
            if path.startswith(prefix):
                for item in items:
                    if item["id"] == path[len(prefix):]:
                        return 200, {kind: item}
                return 404, {"NeutronError": {"type": kind.capitalize() + "NotFound",
                                              "message": "not found", "detail": ""}}
        return None


class Cinder(StandIn):
    """Block storage v3: the volume types (Magnum 15 asks type block-storage)."""

    def __init__(self, check_token, log):
        super(Cinder, self).__init__("cinder", check_token, log)
        self.url = self.base + "/v3/%(project_id)s"

    def route(self, method, path, query, body, user):
        parts = path.strip("/").split("/")
        if method != "GET" or len(parts) < 3 or parts[0] != "v3" or parts[2] != "types":
            return None
        types = [{"id": "%08d-0000-4000-8000-000000000000" % i, "name": n,
                  "is_public": True, "description": None, "extra_specs": {}}
                 for i, n in enumerate(VOLUME_TYPES)]
        if len(parts) == 3:
            return 200, {"volume_types": types}
        if parts[3] == "default":
            return 200, {"volume_type": types[0]}
        return None
