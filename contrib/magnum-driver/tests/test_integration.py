"""Magnum's real conductor handlers and periodic jobs against the real `magnum-gitops serve`
on loopback, writing to a real Git remote (a bare repository, file://).

The binary comes from MAGNUM_GITOPS_BIN. Without it these tests skip, except with CI=true,
where they fail and say how to build it.
"""

import json
import re
import threading
import time
import urllib.request
import uuid as uuidlib

import fixtures
import yaml

from magnum.common import exception
import magnum.conf
from magnum import objects

from magnum_gitops_driver import client as client_mod

from tests import base
from tests import fakes
from tests import service as svc_mod
from tests import tlsutil

NAMESPACE = "magnum-" + base.PROJECT_ID
CLUSTER_LABELS = {"auto_scaling_enabled": "true", "min_node_count": "1",
                  "max_node_count": "8", "capi_helm_chart_version": "0.27.0"}


class IntegrationTestCase(base.DriverTestCase):

    def setUp(self):
        binary = svc_mod.binary()  # raises with CI=true when unset
        if binary is None:
            self.skipTest("%s is not set; the integration tests need the magnum-gitops "
                          "binary" % svc_mod.BIN_ENV)
        super(IntegrationTestCase, self).setUp()
        self.logs = self.useFixture(fixtures.FakeLogger(level=10, format="%(message)s"))
        self.svc = svc_mod.Service(binary)
        self.addCleanup(self.svc.close)
        self.config(endpoint=self.svc.url, token_file=self.svc.token_file, timeout=10.0,
                    deadline=25.0, retries=10, backoff_initial=0.2, backoff_max=1.0,
                    group="gitops")
        self.answers = []
        real_post = client_mod.Client.post_event
        test = self

        def spy(client, event, request_id=None):
            try:
                answer = real_post(client, event, request_id)
            except Exception as e:
                test.answers.append((event, e))
                raise
            test.answers.append((event, answer))
            return answer

        self.useFixture(fixtures.MockPatchObject(client_mod.Client, "post_event", spy))

    # -- helpers ----------------------------------------------------------------------------

    def wait_for(self, cluster, status, timeout=20):
        """Run Magnum's status job until the cluster reaches status (or is destroyed)."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            self.sync_status()
            try:
                last = self.reload(cluster)
            except exception.ClusterNotFound:
                if status is None:
                    return None
                raise
            if last.status == status:
                return last
            time.sleep(0.5)
        try:
            says = self.svc.status(cluster.uuid)
        except Exception as e:  # noqa: BLE001
            says = e
        self.fail("cluster %s is %s (%s), not %s, after %ss; service says %s"
                  % (cluster.uuid, last.status, last.status_reason, status, timeout, says))

    def wait_files(self, done, timeout=30):
        """Wait until done(the files on the branch) holds."""
        deadline = time.monotonic() + timeout
        while not done(self.svc.files()):
            if time.monotonic() > deadline:
                self.fail("after %ss the branch holds %s" % (timeout, self.svc.files()))
            time.sleep(0.5)

    def cluster_dir(self, cluster):
        return "clusters/magnum/%s/%s" % (NAMESPACE, cluster.stack_id)

    def values(self, cluster, rev="main"):
        hr = yaml.safe_load(self.svc.show(self.cluster_dir(cluster) + "/helmrelease.yaml", rev))
        return hr["spec"]["values"]

    def apply(self, cluster, masters, workers, version):
        """Flux has applied the head commit; CAPI reports the cluster as described."""
        self.svc.set_objects([svc_mod.kustomization(self.svc.head())] + svc_mod.cluster_objects(
            cluster.stack_id, NAMESPACE, cluster.uuid, base.PROJECT_ID, masters, workers,
            version))

    def last_commit(self, operation, cluster, count):
        commits = self.svc.commits()
        self.assertEqual(count, len(commits), [c["subject"] for c in commits])
        c = commits[-1]
        t = c["trailers"]
        self.assertEqual(operation, t["Magnum-Operation"])
        self.assertEqual(cluster.uuid, t["Magnum-Cluster-UUID"])
        event, answer = self.answers[-1]
        self.assertEqual(event["id"], t["Magnum-Event-ID"])
        self.assertEqual(4, uuidlib.UUID(event["id"]).version)
        self.assertEqual(c["sha"], answer["revision"])
        return c

    def assertNoSecretsAnywhere(self):
        secrets = [v["secret"] for v in self.rec.app_creds.values()]
        secrets += [self.svc.token, base.TRUSTEE_PASSWORD]
        keys = []
        for kp in objects.X509KeyPair.list(self.admin_context()):
            keys.append(kp.private_key)
        texts = {"driver log": self.logs.output, "service log": self.svc.logs()}
        # The captures are live: both logs name the events.
        self.assertRegex(self.logs.output, "magnum-gitops (accepted|refused) event")
        self.assertRegex(self.svc.logs(), '"msg":"event (applied|refused)"')
        for rev in self.svc.git("rev-list", "--all").split():
            texts["commit " + rev] = self.svc.git("show", "--format=%B", rev)
        for name, text in texts.items():
            for s in secrets:
                self.assertNotIn(s, text, name)
            for k in keys:
                body = [ln for ln in k.splitlines() if ln and not ln.startswith("-----")]
                self.assertNotIn(body[1], text, name)
            self.assertNotIn("BEGIN PRIVATE KEY", text, name)
            self.assertNotIn("BEGIN ENCRYPTED PRIVATE KEY", text, name)


class TestLifecycle(IntegrationTestCase):

    def test_create_resize_nodegroups_upgrade_delete(self):
        self.svc.start()
        template = self.make_template()

        # -- create ------------------------------------------------------------------------
        cluster = self.create_cluster(template, master_count=1, node_count=2,
                                      labels=dict(CLUSTER_LABELS))
        self.assertEqual("CREATE_IN_PROGRESS", cluster.status)
        self.assertTrue(re.match(r"^prod-a-[a-z0-9]+$", cluster.stack_id), cluster.stack_id)
        self.assertEqual({cluster.stack_id},
                         {ng.stack_id for ng in self.groups(cluster).values()})
        c = self.last_commit("create_cluster", cluster, 1)
        self.assertEqual(cluster.stack_id, c["trailers"]["Magnum-Stack-ID"])
        files = self.svc.files()
        d = self.cluster_dir(cluster)
        for name in ("helmrelease.yaml", "secret-ca.sops.yaml", "secret-etcd.sops.yaml",
                     "secret-proxy.sops.yaml", "secret-sa.sops.yaml",
                     "secret-cloud-credentials.sops.yaml"):
            self.assertIn(d + "/" + name, files)
        creds = self.svc.show(d + "/secret-cloud-credentials.sops.yaml")
        self.assertIn("ENC[AES256_GCM", creds)
        self.assertIn(self.svc.age_recipient, creds)
        v = self.values(cluster)
        self.assertEqual("1.33.7", v["kubernetesVersion"])
        self.assertEqual(fakes.IMAGE_ID, v["machineImageId"])
        self.assertEqual(fakes.EXT_NET_ID, v["clusterNetworking"]["externalNetworkId"])
        self.assertEqual(1, v["controlPlane"]["machineCount"])
        self.assertEqual("m1.large", v["controlPlane"]["machineFlavor"])
        self.assertEqual([("default-worker", 2)],
                         [(g["name"], g["machineCount"]) for g in v["nodeGroups"]])

        self.sync_status()
        cluster = self.reload(cluster)
        self.assertEqual("CREATE_IN_PROGRESS", cluster.status)
        self.assertIn("waiting for Flux to create HelmRelease", cluster.status_reason)

        self.apply(cluster, 1, {"default-worker": 2}, "v1.33.7")
        cluster = self.wait_for(cluster, "CREATE_COMPLETE")
        self.assertEqual(("https://203.0.113.10:6443", "v1.33.7"),
                         (cluster.api_address, cluster.coe_version))
        self.assertEqual({"CREATE_COMPLETE"},
                         {ng.status for ng in self.groups(cluster).values()})

        # Magnum's health job stores what the service says.
        cluster.health_status = "UNKNOWN"
        cluster.health_status_reason = {}
        cluster.save()
        self.sync_health()
        cluster = self.reload(cluster)
        self.assertEqual("HEALTHY", cluster.health_status)
        self.assertEqual("Ready", cluster.health_status_reason.get("cluster"))

        # -- resize ------------------------------------------------------------------------
        worker = self.groups(cluster)["default-worker"]
        self.cluster_handler.cluster_resize(self.context, cluster, 5, [], worker)
        self.last_commit("resize_cluster", cluster, 2)
        self.assertEqual(5, self.values(cluster)["nodeGroups"][0]["machineCount"])
        self.sync_status()
        cluster = self.reload(cluster)
        self.assertEqual("UPDATE_IN_PROGRESS", cluster.status)
        self.assertIn("waiting for Flux to apply revision", cluster.status_reason)
        self.apply(cluster, 1, {"default-worker": 5}, "v1.33.7")
        cluster = self.wait_for(cluster, "UPDATE_COMPLETE")
        worker = self.groups(cluster)["default-worker"]
        self.assertEqual(("UPDATE_COMPLETE", 5), (worker.status, worker.node_count))

        # -- node group add ------------------------------------------------------------------
        gpu = self.new_nodegroup(cluster, name="gpu", node_count=1, min_node_count=1,
                                 max_node_count=3)
        self.ng_handler.nodegroup_create(self.context, cluster, gpu)
        self.last_commit("create_nodegroup", cluster, 3)
        groups = {g["name"]: g for g in self.values(cluster)["nodeGroups"]}
        self.assertEqual(("g1.a100", 1, 1, 3),
                         tuple(groups["gpu"].get(k) for k in ("machineFlavor", "machineCount",
                                                              "machineCountMin",
                                                              "machineCountMax")))
        self.assertEqual("CREATE_IN_PROGRESS", self.groups(cluster)["gpu"].status)
        self.apply(cluster, 1, {"default-worker": 5, "gpu": 1}, "v1.33.7")
        cluster = self.wait_for(cluster, "UPDATE_COMPLETE")
        self.assertEqual("CREATE_COMPLETE", self.groups(cluster)["gpu"].status)

        # -- node group update: the conductor passes it patched and unsaved ------------------
        gpu = self.groups(cluster)["gpu"]
        gpu.max_node_count = 7
        self.ng_handler.nodegroup_update(self.context, cluster, gpu)
        self.last_commit("update_nodegroup", cluster, 4)
        groups = {g["name"]: g for g in self.values(cluster)["nodeGroups"]}
        self.assertEqual(7, groups["gpu"]["machineCountMax"])
        self.apply(cluster, 1, {"default-worker": 5, "gpu": 1}, "v1.33.7")
        cluster = self.wait_for(cluster, "UPDATE_COMPLETE")
        self.assertEqual(("UPDATE_COMPLETE", 7),
                         (self.groups(cluster)["gpu"].status,
                          self.groups(cluster)["gpu"].max_node_count))

        # -- upgrade ----------------------------------------------------------------------------
        new = self.make_template(image_id=fakes.IMAGE_NEW_NAME, name="k8s-1.34-ubuntu")
        worker = self.groups(cluster)["default-worker"]
        self.cluster_handler.cluster_upgrade(self.context, cluster, new, 1, worker)
        self.last_commit("upgrade_cluster", cluster, 5)
        v = self.values(cluster)
        self.assertEqual(("1.34.2", fakes.IMAGE_NEW_ID),
                         (v["kubernetesVersion"], v["machineImageId"]))
        cluster = self.reload(cluster)
        self.assertEqual(new.uuid, cluster.cluster_template_id)
        self.apply(cluster, 1, {"default-worker": 5, "gpu": 1}, "v1.34.2")
        cluster = self.wait_for(cluster, "UPDATE_COMPLETE")
        self.assertEqual("v1.34.2", cluster.coe_version)
        self.assertEqual({"UPDATE_COMPLETE"},
                         {ng.status for ng in self.groups(cluster).values()})

        # -- node group delete -------------------------------------------------------------
        self.ng_handler.nodegroup_delete(self.context, cluster, self.groups(cluster)["gpu"])
        self.last_commit("delete_nodegroup", cluster, 6)
        self.assertEqual(["default-worker"],
                         [g["name"] for g in self.values(cluster)["nodeGroups"]])
        self.assertEqual("DELETE_IN_PROGRESS", self.groups(cluster)["gpu"].status)
        self.apply(cluster, 1, {"default-worker": 5}, "v1.34.2")
        cluster = self.wait_for(cluster, "UPDATE_COMPLETE")
        self.assertEqual({"default-master", "default-worker"}, set(self.groups(cluster)))

        # -- delete ---------------------------------------------------------------------------
        refs = [cluster.ca_cert_ref, cluster.magnum_cert_ref, cluster.etcd_ca_cert_ref,
                cluster.front_proxy_ca_cert_ref]
        self.assertNoSecretsAnywhere()
        self.cluster_handler.cluster_delete(self.context, cluster.uuid)
        self.last_commit("delete_cluster", cluster, 7)
        files = self.svc.files()
        self.assertNotIn(self.cluster_dir(cluster) + "/helmrelease.yaml", files)
        self.assertIn(self.cluster_dir(cluster) + "/secret-cloud-credentials.sops.yaml", files)
        self.assertEqual({"DELETE_IN_PROGRESS"},
                         {ng.status for ng in self.groups(cluster).values()})
        self.apply(cluster, 1, {"default-worker": 5}, "v1.34.2")  # Flux has not acted yet
        self.sync_status()
        self.assertEqual("DELETE_IN_PROGRESS", self.reload(cluster).status)
        self.svc.set_objects([svc_mod.kustomization(self.svc.head())])  # the Cluster is gone
        self.wait_for(cluster, None)
        self.assertRaises(exception.ClusterNotFound, self.reload, cluster)
        self.assertEqual([], objects.NodeGroup.list(self.admin_context(), cluster.uuid))
        left = {kp.uuid for kp in objects.X509KeyPair.list(self.admin_context())}
        self.assertEqual(set(), set(refs) & left)

        # The service's second phase: the Secret files leave Git; once Flux has applied
        # that, the Secrets leave the management cluster and the rest of the directory Git.
        prefix = self.cluster_dir(cluster) + "/"
        self.wait_files(lambda files: not any(f.startswith(prefix + "secret-") for f in files))
        self.assertIn(prefix + "magnum-cluster.yaml", self.svc.files())
        self.svc.set_objects([svc_mod.kustomization(self.svc.head())])  # Flux applied it
        self.wait_files(lambda files: not any(f.startswith(prefix) for f in files))
        commits = self.svc.commits()
        self.assertEqual(9, len(commits), [c["subject"] for c in commits])
        self.assertEqual(
            ["create_cluster", "resize_cluster", "create_nodegroup", "update_nodegroup",
             "upgrade_cluster", "delete_nodegroup", "delete_cluster", "delete_cluster_secrets",
             "delete_cluster_complete"],
            [c["trailers"]["Magnum-Operation"] for c in commits])
        self.svc.git("fsck", "--strict")
        self.assertNoSecretsAnywhere()


class TestCARotation(IntegrationTestCase):

    def test_refused_rotation_keeps_the_ca_and_a_resize_recovers(self):
        self.svc.start()
        cluster = self.create_cluster(self.make_template())
        self.apply(cluster, 1, {"default-worker": 2}, "v1.33.7")
        cluster = self.wait_for(cluster, "CREATE_COMPLETE")
        ca_before = self.svc.show(self.cluster_dir(cluster) + "/secret-ca.sops.yaml")
        refs = (cluster.ca_cert_ref, cluster.magnum_cert_ref, cluster.etcd_ca_cert_ref,
                cluster.front_proxy_ca_cert_ref)

        self.assertRaises(exception.NotSupported, self.ca_handler.rotate_ca_certificate,
                          self.context, cluster)
        cluster = self.reload(cluster)
        self.assertEqual("UPDATE_FAILED", cluster.status)
        self.assertEqual(refs, (cluster.ca_cert_ref, cluster.magnum_cert_ref,
                                cluster.etcd_ca_cert_ref, cluster.front_proxy_ca_cert_ref))
        self.assertEqual(1, len(self.svc.commits()))  # nothing sent

        # Resize to the same count: an event, a commit (the cluster record), and back to
        # UPDATE_COMPLETE; the CA Secret in Git is the one the cluster trusts.
        worker = self.groups(cluster)["default-worker"]
        self.cluster_handler.cluster_resize(self.context, cluster, 2, [], worker)
        self.last_commit("resize_cluster", cluster, 2)
        self.apply(cluster, 1, {"default-worker": 2}, "v1.33.7")
        self.wait_for(cluster, "UPDATE_COMPLETE")
        self.assertEqual(ca_before,
                         self.svc.show(self.cluster_dir(cluster) + "/secret-ca.sops.yaml"))


class TestMutualTLS(IntegrationTestCase):
    """ca_file, cert_file and key_file against serve's HTTPS with client certificates."""

    def setUp(self):
        super(TestMutualTLS, self).setUp()
        self.tls = tlsutil.make(self.useFixture(fixtures.TempDir()).path)
        self.svc = svc_mod.Service(svc_mod.binary(), tls=self.tls)
        self.addCleanup(self.svc.close)
        self.svc.start()
        self.config(endpoint=self.svc.url, token_file=None, ca_file=self.tls["ca_file"],
                    cert_file=self.tls["client_cert"], key_file=self.tls["client_key"],
                    group="gitops")

    def test_client_certificate_instead_of_a_token(self):
        self.assertTrue(self.svc.url.startswith("https://"))
        cluster = self.create_cluster(self.make_template())
        self.assertEqual("CREATE_IN_PROGRESS", cluster.status)
        self.last_commit("create_cluster", cluster, 1)
        self.apply(cluster, 1, {"default-worker": 2}, "v1.33.7")
        self.wait_for(cluster, "CREATE_COMPLETE")

    def test_no_client_certificate_is_refused(self):
        self.config(cert_file=None, key_file=None, group="gitops")
        cluster = self.new_cluster(self.make_template())
        self.assertRaises(exception.MagnumException, self.cluster_handler.cluster_create,
                          self.context, cluster, 1, 2, 60)
        self.assertEqual("missing or invalid credentials", self.reload(cluster).status_reason)

    def test_untrusted_server_certificate_fails_at_once(self):
        other = tlsutil.make(self.useFixture(fixtures.TempDir()).path, prefix="other")
        self.config(ca_file=other["ca_file"], group="gitops")
        cluster = self.new_cluster(self.make_template())
        start = time.monotonic()
        self.assertRaises(exception.MagnumException, self.cluster_handler.cluster_create,
                          self.context, cluster, 1, 2, 60)
        self.assertLess(time.monotonic() - start, 10)
        reason = self.reload(cluster).status_reason
        self.assertTrue(reason.startswith("TLS with magnum-gitops at %s failed" % self.svc.url),
                        reason)
        self.assertNotIn("retrying", self.logs.output)
        self.assertEqual({}, self.rec.app_creds)
        self.assertEqual([], self.svc.commits())


class TestFailures(IntegrationTestCase):

    def test_bad_event_fails_with_the_service_message(self):
        self.svc.start()
        template = self.make_template(dns_nameserver="8.8.8")
        cluster = self.new_cluster(template)
        e = self.assertRaises(exception.InvalidParameterValue,
                              self.cluster_handler.cluster_create, self.context, cluster, 1,
                              2, 60)
        cluster = self.reload(cluster)
        self.assertEqual("CREATE_FAILED", cluster.status)
        event, err = self.answers[-1]
        self.assertIs(e, err)
        self.assertIn("dns_nameserver", cluster.status_reason)
        # Verbatim: ask the service again with the same body (nothing was stored).
        body = json.dumps(dict(event, id=str(uuidlib.uuid4()))).encode()
        import urllib.error
        import urllib.request
        req = urllib.request.Request(self.svc.url + "/v1/events", data=body, headers={
            "Authorization": "Bearer " + self.svc.token, "Content-Type": "application/json"})
        try:
            urllib.request.urlopen(req, timeout=10)
            self.fail("the service accepted the bad event")
        except urllib.error.HTTPError as http_err:
            self.assertEqual(400, http_err.code)
            message = json.loads(http_err.read())["error"]["message"]
        self.assertEqual(message, cluster.status_reason)
        self.assertEqual([], self.svc.commits())
        self.assertEqual({}, self.rec.app_creds)  # the refused event's credential is gone
        self.assertEqual(1, len(self.rec.deleted_app_creds))
        self.assertNoSecretsAnywhere()

    def test_the_service_answers_its_version_and_the_driver_accepts_it(self):
        # GET /version needs no token, answers what `magnum-gitops version` prints, and the
        # driver keeps the service's release once it found its event API there.
        self.svc.start()
        client_mod._COMPATIBLE.clear()
        self.addCleanup(client_mod._COMPATIBLE.clear)
        built = json.loads(svc_mod.run(self.svc.binary, "version", "-o", "json"))
        with urllib.request.urlopen(self.svc.url + "/version", timeout=10) as resp:
            self.assertEqual(built, json.loads(resp.read()))
            self.assertEqual(built["version"], resp.headers["Magnum-Gitops-Version"])
        client_mod.Client(magnum.conf.CONF.gitops).check_service()
        self.assertEqual({self.svc.url.rstrip("/"): built["version"]}, client_mod._COMPATIBLE)

    def test_wrong_token_fails_without_retrying(self):
        self.svc.start()
        with open(self.token_file, "w") as f:
            f.write("not-the-token")
        self.config(token_file=self.token_file, group="gitops")
        cluster = self.new_cluster(self.make_template())
        self.assertRaises(exception.MagnumException, self.cluster_handler.cluster_create,
                          self.context, cluster, 1, 2, 60)
        cluster = self.reload(cluster)
        self.assertEqual("CREATE_FAILED", cluster.status)
        self.assertEqual("missing or invalid credentials", cluster.status_reason)
        self.assertEqual([], self.svc.commits())
        self.assertNotIn("retrying", self.logs.output)

    def test_outage_is_retried_with_the_same_event(self):
        # The service is down when the conductor calls; it comes up while the driver retries.
        starter = self.start_after_a_refused_attempt()
        cluster = self.create_cluster(self.make_template())
        starter.join()
        self.assertEqual("CREATE_IN_PROGRESS", cluster.status)
        self.assertIn("cannot connect", self.logs.output)
        self.assertIn("retrying", self.logs.output)
        self.assertIn("accepted event", self.logs.output)
        self.last_commit("create_cluster", cluster, 1)
        applied = [e for e in self.svc.log_events() if e.get("msg") == "event applied"]
        self.assertEqual(1, len(applied))
        self.assertEqual(self.answers[-1][0]["id"], applied[0]["event_id"])

        # Down again during a resize: the resize waits for it, once.
        cluster = self.set_status(cluster, "CREATE_COMPLETE")
        self.svc.stop()
        restarter = self.start_after_a_refused_attempt()
        worker = self.groups(cluster)["default-worker"]
        self.cluster_handler.cluster_resize(self.context, cluster, 3, [], worker)
        restarter.join()
        self.assertEqual("UPDATE_IN_PROGRESS", self.reload(cluster).status)
        self.last_commit("resize_cluster", cluster, 2)
        self.assertNoSecretsAnywhere()

    def start_after_a_refused_attempt(self):
        """Start the service once the driver has logged a refused connection."""
        seen = self.logs.output.count("cannot connect")

        def watch():
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                if self.logs.output.count("cannot connect") > seen:
                    self.svc.start()
                    return
                time.sleep(0.05)

        t = threading.Thread(target=watch, daemon=True)
        t.start()
        return t

    def test_deadline_ends_in_failed(self):
        # Nothing listens: after the deadline the create fails with a clear reason.
        self.config(deadline=1.5, backoff_initial=0.1, backoff_max=0.3, group="gitops")
        cluster = self.new_cluster(self.make_template())
        self.assertRaises(client_mod.Unavailable, self.cluster_handler.cluster_create,
                          self.context, cluster, 1, 2, 60)
        cluster = self.reload(cluster)
        self.assertEqual("CREATE_FAILED", cluster.status)
        self.assertTrue(cluster.status_reason.startswith(
            "magnum-gitops unavailable: cannot connect to %s" % self.svc.url),
            cluster.status_reason)
        self.assertEqual({}, self.rec.app_creds)  # never reached the service
