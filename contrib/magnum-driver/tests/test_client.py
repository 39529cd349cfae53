"""The HTTP client against a scripted loopback server: retries, backoff, deadline, errors.

(The service's contract is ours, so a scripted server is enough for these cases; the real
service is exercised by test_integration.py.)
"""

import json
import os
import socket
import tempfile
import threading
import time
import types
import unittest

import fixtures
import testtools

from magnum.common import exception

from magnum_gitops_driver import __version__
from magnum_gitops_driver import client as client_mod
from magnum_gitops_driver.event import API_VERSION

from tests.scripted import Answer, ScriptedServer

TOKEN = "bearer-token-DO-NOT-LOG-7f3a"
SECRET = "appcred-secret-DO-NOT-LOG-91c2"
KEY = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAkeymaterialDONOTLOG\n-----END PRIVATE KEY-----\n"
OK = {"id": "x", "stack_id": "prod-a-abcdefghijkl", "stack_id_generated": True,
      "namespace": "magnum-p", "revision": "a" * 40, "no_op": False, "branch": "main"}


def event(eid="3f1c0d52-7a0e-4f57-9f0e-2b3c4d5e6f70"):
    return {"apiVersion": "magnum-gitops.io/v1alpha1", "kind": "ClusterEvent", "id": eid,
            "operation": "create_cluster", "cluster": {"uuid": "c-1", "name": "prod-a"},
            "secrets": {"application_credential": {"id": "ac", "secret": SECRET},
                        "certificates": {"ca": {"cert": "C", "key": KEY}}}}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class ClientTest(testtools.TestCase):

    def setUp(self):
        super(ClientTest, self).setUp()
        self.logs = self.useFixture(fixtures.FakeLogger(level=10, format="%(message)s"))
        fd, self.token_file = tempfile.mkstemp()
        os.write(fd, (TOKEN + "\n").encode())
        os.close(fd)
        self.addCleanup(os.unlink, self.token_file)
        self.sleeps = []
        # Each test asks its own service's /version.
        client_mod._COMPATIBLE.clear()
        self.addCleanup(client_mod._COMPATIBLE.clear)

    def conf(self, endpoint, **kw):
        values = dict(endpoint=endpoint, token_file=self.token_file, ca_file=None,
                      cert_file=None, key_file=None, timeout=2.0, deadline=10.0, retries=3,
                      backoff_initial=0.2, backoff_max=0.5, allow_plain_http=False)
        values.update(kw)
        return types.SimpleNamespace(**values)

    def client(self, endpoint, **kw):
        def sleep(seconds):
            self.sleeps.append(seconds)
            time.sleep(min(seconds, 0.01))
        return client_mod.Client(self.conf(endpoint, **kw), sleep=sleep)

    def assertNoSecrets(self, *texts):
        for text in texts + (self.logs.output,):
            for s in (TOKEN, SECRET, "keymaterialDONOTLOG"):
                self.assertNotIn(s, text)

    # -- success and retries -------------------------------------------------------------

    def test_retries_5xx_with_the_same_event_and_backoff(self):
        with ScriptedServer([Answer(503, {"error": {"code": "unavailable",
                                                    "message": "git push failed"}}),
                             Answer(500, raw=b"<html>oops</html>"),
                             Answer(200, OK)]) as srv:
            answer = self.client(srv.url).post_event(event(), request_id="req-1")
        self.assertEqual(OK, answer)
        self.assertEqual(3, len(srv.requests))
        bodies = {r["body"] for r in srv.requests}
        self.assertEqual(1, len(bodies))
        self.assertEqual(event(), json.loads(bodies.pop()))
        for r in srv.requests:
            self.assertEqual(("POST", "/v1/events"), (r["method"], r["path"]))
            h = r["headers"]
            self.assertEqual("Bearer " + TOKEN, h["authorization"])
            self.assertEqual("application/json", h["content-type"])
            self.assertEqual(event()["id"], h["idempotency-key"])
            self.assertEqual("req-1", h["x-openstack-request-id"])
            self.assertTrue(h["user-agent"].startswith("magnum-gitops-driver/"))
        # Exponential, half jittered: [0.1, 0.2], then [0.2, 0.4].
        self.assertEqual(2, len(self.sleeps))
        self.assertTrue(0.1 <= self.sleeps[0] <= 0.2, self.sleeps)
        self.assertTrue(0.2 <= self.sleeps[1] <= 0.4, self.sleeps)
        self.assertIn("git push failed", self.logs.output)
        self.assertNoSecrets()

    def test_429_408_and_proxy_502_are_retried(self):
        with ScriptedServer([Answer(429, {"error": {"message": "slow down"}}),
                             Answer(408, {}), Answer(502, raw=b"<html>Bad Gateway</html>"),
                             Answer(200, OK)]) as srv:
            self.client(srv.url, retries=5).post_event(event())
        self.assertEqual(4, len(srv.requests))

    def test_gives_up_after_the_retries(self):
        with ScriptedServer([Answer(503, {"error": {"code": "unavailable",
                                                    "message": "management cluster down"}})]) \
                as srv:
            e = self.assertRaises(client_mod.Unavailable,
                                  self.client(srv.url, retries=2).post_event, event())
        self.assertEqual(3, len(srv.requests))
        self.assertIn("HTTP 503: management cluster down", str(e))
        self.assertIn("3 attempt(s)", str(e))
        self.assertTrue(e.gitops_maybe_received)
        self.assertNoSecrets(str(e))

    def test_connection_refused_until_the_deadline(self):
        port = free_port()
        start = time.monotonic()
        e = self.assertRaises(
            client_mod.Unavailable,
            self.client("http://127.0.0.1:%d" % port, retries=100, deadline=0.6,
                        backoff_initial=0.2).post_event, event())
        self.assertIn("cannot connect to http://127.0.0.1:%d" % port, str(e))
        self.assertFalse(e.gitops_maybe_received)
        self.assertLess(time.monotonic() - start, 5)

    def test_outage_then_recovery(self):
        port = free_port()
        holder = {}

        def start_later():
            time.sleep(0.4)
            holder["srv"] = ScriptedServer([Answer(200, OK)], port=port).__enter__()

        t = threading.Thread(target=start_later)
        t.start()
        c = client_mod.Client(self.conf("http://127.0.0.1:%d" % port, retries=20,
                                        deadline=10, backoff_initial=0.1, backoff_max=0.2))
        try:
            answer = c.post_event(event())
        finally:
            t.join()
            holder["srv"].__exit__(None, None, None)
        self.assertEqual(OK, answer)
        self.assertEqual(1, len(holder["srv"].requests))
        self.assertIn("cannot connect", self.logs.output)

    def test_connection_dropped_after_sending_may_have_been_received(self):
        # The server reads the request, then closes without answering.
        srv_sock = socket.socket()
        srv_sock.bind(("127.0.0.1", 0))
        srv_sock.listen(5)
        port = srv_sock.getsockname()[1]
        seen = []

        def serve():
            while True:
                try:
                    conn, _ = srv_sock.accept()
                except OSError:
                    return
                seen.append(conn.recv(65536))
                conn.close()

        t = threading.Thread(target=serve, daemon=True)
        t.start()
        try:
            e = self.assertRaises(client_mod.Unavailable,
                                  self.client("http://127.0.0.1:%d" % port, retries=1).post_event,
                                  event())
        finally:
            srv_sock.close()
        self.assertIn("connection to http://127.0.0.1:%d lost" % port, str(e))
        self.assertTrue(e.gitops_maybe_received)
        # GET /version (dropped too: it decides nothing), then the event, twice.
        self.assertEqual([b"GET /version", b"POST /v1/events", b"POST /v1/events"],
                         [b" ".join(r.split(b" ")[:2]) for r in seen])

    def test_timeouts_stop_at_the_deadline(self):
        with ScriptedServer([Answer(200, OK, delay=1.5)]) as srv:
            start = time.monotonic()
            e = self.assertRaises(
                client_mod.Unavailable,
                self.client(srv.url, timeout=0.3, deadline=1.0, retries=50,
                            backoff_initial=0.05, backoff_max=0.05).post_event, event())
            elapsed = time.monotonic() - start
        self.assertIn("no answer within", str(e))
        self.assertTrue(e.gitops_maybe_received)
        self.assertGreaterEqual(len(srv.requests), 2)
        self.assertLess(elapsed, 1.6)

    # -- final answers ----------------------------------------------------------------

    def test_400_is_final_and_verbatim(self):
        msg = 'resolved.image.kube_version: "1.28.3+k3s1" is not a Kubernetes release (100%)'
        with ScriptedServer([Answer(400, {"error": {"code": "invalid_input", "message": msg,
                                                    "fields": [{"field": "x",
                                                                "message": "y"}]}})]) as srv:
            e = self.assertRaises(exception.InvalidParameterValue,
                                  self.client(srv.url).post_event, event())
        self.assertEqual(1, len(srv.requests))
        self.assertEqual(msg, str(e))
        self.assertEqual(400, e.code)
        self.assertTrue(e.gitops_refused)
        self.assertEqual([], self.sleeps)
        self.assertNoSecrets(str(e))

    def test_409_401_413(self):
        cases = [
            (Answer(409, {"error": {"code": "idempotency_conflict",
                                    "message": "event id reused with another body"}}),
             exception.Conflict, "event id reused with another body"),
            (Answer(401, {"error": {"code": "unauthorized", "message": "bad token"}}),
             exception.MagnumException, "bad token"),
            (Answer(413, raw=b"<html>Request Entity Too Large</html>"),
             exception.InvalidParameterValue,
             "magnum-gitops answered HTTP 413 Request Entity Too Large: "
             "<html>Request Entity Too Large</html>"),
            (Answer(404, {"error": "not found"}), exception.MagnumException, "not found"),
            (Answer(502, {"error": {"code": "repository_refused",
                                    "message": "push: permission denied"}}),
             exception.MagnumException, "push: permission denied"),
        ]
        for answer, cls, text in cases:
            with ScriptedServer([answer]) as srv:
                e = self.assertRaises(cls, self.client(srv.url).post_event, event())
            self.assertEqual(text, str(e))
            self.assertEqual(1, len(srv.requests))
        self.assertNoSecrets()

    def test_non_json_success_is_an_error(self):
        with ScriptedServer([Answer(200, raw=b"ok")]) as srv:
            self.assertRaises(exception.MagnumException,
                              self.client(srv.url).post_event, event())

    # -- configuration -----------------------------------------------------------------

    def test_endpoint_rules(self):
        self.assertRaises(exception.MagnumException, self.client, None)
        self.assertRaises(exception.MagnumException, self.client, "ftp://x")
        e = self.assertRaises(exception.MagnumException, self.client,
                              "http://magnum-gitops.example.org")
        self.assertIn("plain http", str(e))
        self.client("http://magnum-gitops.example.org", allow_plain_http=True)
        self.client("https://magnum-gitops.example.org")
        self.client("http://localhost:8080")
        self.client("http://[::1]:8080")

    def test_tls_settings(self):
        c = self.client("https://x.example.org", ca_file="/etc/ca.pem",
                        cert_file="/etc/c.pem", key_file="/etc/k.pem")
        self.assertEqual({"verify": "/etc/ca.pem", "cert": ("/etc/c.pem", "/etc/k.pem")},
                         c.tls)
        self.assertEqual({"verify": True, "cert": None},
                         self.client("https://x.example.org").tls)

    def test_token_is_read_per_event(self):
        with ScriptedServer([Answer(200, OK)]) as srv:
            c = self.client(srv.url)
            c.post_event(event())
            with open(self.token_file, "w") as f:
                f.write("rotated-token")
            c.post_event(event("0b3f2a1c-1111-4222-8333-444455556666"))
        self.assertEqual(["Bearer " + TOKEN, "Bearer rotated-token"],
                         [r["headers"]["authorization"] for r in srv.requests])

    def test_unreadable_token_sends_nothing(self):
        with ScriptedServer([Answer(200, OK)]) as srv:
            c = self.client(srv.url, token_file=self.token_file + ".missing")
            e = self.assertRaises(exception.MagnumException, c.post_event, event())
        self.assertEqual([], srv.requests)
        self.assertIn("token_file", str(e))
        self.assertFalse(e.gitops_maybe_received)

    # -- status --------------------------------------------------------------------------

    def test_get_status(self):
        doc = {"uuid": "c-1", "status": "CREATE_COMPLETE"}
        with ScriptedServer([Answer(404, {"error": {"message": "unknown"}}),
                             Answer(200, doc), Answer(503, {"error": {"message": "down"}}),
                             Answer(401, {"error": {"message": "bad token"}})]) as srv:
            c = self.client(srv.url)
            self.assertIsNone(c.get_status("c-1"))
            self.assertEqual(doc, c.get_status("c-1", request_id="r"))
            e = self.assertRaises(client_mod.Unavailable, c.get_status, "c-1")
            self.assertIn("HTTP 503: down", str(e))
            self.assertRaises(exception.MagnumException, c.get_status, "c-1")
        self.assertEqual(["/v1/clusters/c-1/status"] * 4, [r["path"] for r in srv.requests])
        self.assertEqual("Bearer " + TOKEN, srv.requests[0]["headers"]["authorization"])
        self.assertEqual(4, len(srv.requests))  # status reads are not retried

    # -- the service's version -------------------------------------------------------------

    def test_asks_version_once_per_endpoint(self):
        with ScriptedServer([Answer(200, OK)]) as srv:
            self.client(srv.url).post_event(event())
            c = self.client(srv.url)  # the conductor's next call: another client
            c.post_event(event("0b3f2a1c-1111-4222-8333-444455556666"))
            c.get_status("c-1")
        self.assertEqual(1, len(srv.version_requests))
        self.assertEqual(3, len(srv.requests))
        h = srv.version_requests[0]["headers"]
        self.assertEqual("application/json", h["accept"])
        self.assertTrue(h["user-agent"].startswith("magnum-gitops-driver/" + __version__))
        self.assertIn("magnum-gitops %s at %s speaks event API %s"
                      % (__version__, srv.url, API_VERSION), self.logs.output)
        self.assertNotIn("install one release", self.logs.output)

    def test_refuses_what_the_service_cannot_read(self):
        cases = [
            ("another event API",
             Answer(200, {"version": "1.0.0", "eventAPIVersions": ["magnum-gitops.io/v1"]}),
             "magnum-gitops 1.0.0 at %%s speaks event API magnum-gitops.io/v1; this driver "
             "(magnum-gitops-driver %s) sends %s. Install the driver and the service of one "
             "release." % (__version__, API_VERSION)),
            ("no event API", Answer(200, {"version": "1.0.0", "eventAPIVersions": []}),
             "speaks event API (none)"),
            ("a service older than GET /version", Answer(404, raw=b"404 page not found\n"),
             "magnum-gitops at %%s has no GET /version: it is older than this driver "
             "(magnum-gitops-driver %s, event API %s)" % (__version__, API_VERSION)),
            ("not a magnum-gitops answer", Answer(200, raw=b"<html>welcome</html>"),
             "answered GET /version without eventAPIVersions"),
        ]
        for name, answer, text in cases:
            with ScriptedServer([Answer(200, OK)], version=answer) as srv:
                c = self.client(srv.url)
                e = self.assertRaises(client_mod.IncompatibleService, c.post_event, event())
                self.assertIn(text.replace("%s", srv.url), str(e), name)
                self.assertFalse(e.gitops_maybe_received, name)
                # Status reads are refused too; a refusal is not kept: asked each time.
                self.assertRaises(client_mod.IncompatibleService, c.get_status, "c-1")
            self.assertEqual([], srv.requests, name)  # nothing sent
            self.assertEqual(2, len(srv.version_requests), name)
        self.assertNoSecrets()

    def test_another_release_of_the_same_event_api_is_accepted_with_a_warning(self):
        with ScriptedServer([Answer(200, OK)],
                            version=Answer(200, {"version": "9.9.9",
                                                 "eventAPIVersions": ["magnum-gitops.io/v1",
                                                                      API_VERSION]})) as srv:
            self.assertEqual(OK, self.client(srv.url).post_event(event()))
        self.assertIn("magnum-gitops 9.9.9 at %s speaks event API %s, the one "
                      "magnum-gitops-driver %s sends; install one release of both"
                      % (srv.url, API_VERSION, __version__), self.logs.output)

    def test_an_unanswered_version_decides_nothing(self):
        # A failing /version leaves the judgement to the request, and to the next use.
        with ScriptedServer([Answer(200, OK)],
                            version=Answer(503, {"error": {"message": "down"}})) as srv:
            c = self.client(srv.url)
            self.assertEqual(OK, c.post_event(event()))
            self.assertEqual(OK, c.get_status("c-1"))
        self.assertEqual(2, len(srv.version_requests))
        self.assertEqual(2, len(srv.requests))


if __name__ == "__main__":
    unittest.main()
