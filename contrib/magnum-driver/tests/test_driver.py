"""The driver under Magnum's real conductor handlers: the events it builds and what it
records in Magnum. The service is replaced by a recorder of Client.post_event (the HTTP
side is covered by test_client.py and, against the real service, test_integration.py).
"""

import json

from cryptography import x509 as cx509
from cryptography.hazmat.primitives import serialization

from magnum.common import exception
from magnum.drivers.common import driver as base_driver
from magnum import objects

from magnum_gitops_driver import client as client_mod
from magnum_gitops_driver import driver as gitops_driver

from tests import base
from tests import fakes


def _key_matches_cert(cert_pem, key_pem):
    cert = cx509.load_pem_x509_certificate(cert_pem.encode())
    key = serialization.load_pem_private_key(key_pem.encode(), password=None)
    fmt = (serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return cert.public_key().public_bytes(*fmt) == key.public_key().public_bytes(*fmt)


class TestSelection(base.DriverTestCase):

    def test_real_loader_picks_the_driver_for_both_tuples(self):
        for os_distro in ("ubuntu", "flatcar"):
            d = base_driver.Driver.get_driver("vm", os_distro, "kubernetes")
            self.assertIsInstance(d, gitops_driver.Driver)
        self.assertEqual("k8s_gitops_v1", base_driver.Driver.get_drivers()[
            ("vm", "ubuntu", "kubernetes")]["entry_point_name"])
        self.assertRaises(exception.ClusterTypeNotSupported,
                          base_driver.Driver.get_driver, "vm", "fedora-coreos-gitops",
                          "kubernetes")

    def test_provides_follows_config(self):
        self.config(provides=["rockylinux", "bm:ubuntu:kubernetes"], group="gitops")
        self.assertEqual([{"server_type": "vm", "os": "rockylinux", "coe": "kubernetes"},
                          {"server_type": "bm", "os": "ubuntu", "coe": "kubernetes"}],
                         gitops_driver.Driver().provides)
        self.config(provides=["vm:ubuntu"], group="gitops")
        self.assertRaises(ValueError, lambda: gitops_driver.Driver().provides)

    def test_master_size_validation(self):
        d = gitops_driver.Driver()
        for n in (1, 3, 5):
            d.validate_master_size(n)
            d.validate_master_resize(n)
        for n in (0, 2, 4, -1):
            self.assertRaises(exception.InvalidParameterValue, d.validate_master_size, n)
            self.assertRaises(exception.InvalidParameterValue, d.validate_master_resize, n)

    def test_template_definition_stub_for_zed_list_drivers(self):
        self.assertIn("n/a", gitops_driver.Driver().get_template_definition().template_path)

    def test_constructing_the_driver_does_no_io(self):
        self.config(endpoint=None, group="gitops")
        d = gitops_driver.Driver()  # get_drivers() does this in magnum-api
        self.assertTrue(d.provides)
        self.assertRaises(exception.MagnumException, lambda: d.client)


class TestCreate(base.DriverTestCase):

    def setUp(self):
        super(TestCreate, self).setUp()
        self.rec_posts = base.Recorded().patch(self)

    def test_create_event_and_records(self):
        template = self.make_template()
        cluster = self.create_cluster(template, master_count=1, node_count=2)

        self.assertEqual(1, len(self.rec_posts.events))
        ev = self.rec_posts.events[0]
        self.assertEqual("magnum-gitops.io/v1alpha1", ev["apiVersion"])
        self.assertEqual("ClusterEvent", ev["kind"])
        self.assertEqual("create_cluster", ev["operation"])
        self.assertEqual({"create_timeout": 60}, ev["params"])
        # Only keys the service accepts at the top level.
        self.assertLessEqual(set(ev), {"apiVersion", "kind", "id", "operation", "nodegroup",
                                       "context", "cluster", "cluster_template", "nodegroups",
                                       "resolved", "secrets", "params", "magnum"})
        self.assertEqual({"project_id": base.PROJECT_ID, "user_id": base.USER_ID,
                          "auth_url": fakes.KEYSTONE_URL}, ev["context"])
        self.assertEqual(self.context.request_id, self.rec_posts.request_ids[0])

        c = ev["cluster"]
        self.assertEqual(cluster.uuid, c["uuid"])
        self.assertEqual("prod-a", c["name"])
        self.assertEqual("CREATE_IN_PROGRESS", c["status"])
        self.assertEqual((1, 2), (c["master_count"], c["node_count"]))
        self.assertEqual(template.uuid, c["cluster_template_id"])
        for secret_field in ("ca_cert_ref", "magnum_cert_ref", "etcd_ca_cert_ref",
                             "front_proxy_ca_cert_ref", "trust_id", "trustee_password",
                             "trustee_username", "trustee_user_id"):
            self.assertNotIn(secret_field, c)
        self.assertNotIn(base.TRUSTEE_PASSWORD, json.dumps(ev))

        self.assertEqual(template.uuid, ev["cluster_template"]["uuid"])
        self.assertEqual(fakes.IMAGE_NAME, ev["cluster_template"]["image_id"])
        self.assertEqual(base.CHART_LABELS, ev["cluster_template"]["labels"])

        ngs = {ng["name"]: ng for ng in ev["nodegroups"]}
        self.assertEqual(["default-master", "default-worker"],
                         [ng["name"] for ng in ev["nodegroups"]])
        self.assertEqual(("master", 1, "m1.large", True, "CREATE_IN_PROGRESS"),
                         tuple(ngs["default-master"][k] for k in
                               ("role", "node_count", "flavor_id", "is_default", "status")))
        self.assertEqual(("worker", 2, "m1.medium"),
                         tuple(ngs["default-worker"][k] for k in
                               ("role", "node_count", "flavor_id")))

        r = ev["resolved"]
        self.assertEqual({"id": fakes.IMAGE_ID, "kube_version": "v1.33.7",
                          "os_distro": "ubuntu"}, r["image"])
        self.assertEqual({fakes.EXT_NET: fakes.EXT_NET_ID, fakes.FIXED_NET: fakes.FIXED_NET_ID},
                         r["networks"])
        self.assertEqual({fakes.FIXED_SUBNET: fakes.FIXED_SUBNET_ID}, r["subnets"])
        self.assertEqual(fakes.VOLUME_TYPES, r["volume_types"])
        self.assertEqual({"m1.large", "m1.medium"}, set(r["flavors"]))
        self.assertEqual(8192, r["flavors"]["m1.large"]["ram_mb"])
        self.assertEqual(fakes.KEYSTONE_URL, r["keystone_public_url"])
        self.assertEqual(fakes.REGION, r["region_name"])

        s = ev["secrets"]
        (ac_id, ac), = self.rec.app_creds.items()
        self.assertEqual({"id": ac_id, "secret": ac["secret"]}, s["application_credential"])
        self.assertEqual(base.USER_ID, ac["user"])
        self.assertTrue(ac["name"].startswith("magnum-%s-" % cluster.uuid))
        self.assertNotIn("ca_bundle", s)  # no [drivers] openstack_ca_file
        self.assertEqual({"ca", "etcd", "front_proxy", "magnum_client"},
                         set(s["certificates"]))
        for name, pair in s["certificates"].items():
            self.assertIn("BEGIN CERTIFICATE", pair["cert"], name)
            self.assertIn("BEGIN PRIVATE KEY", pair["key"], name)  # PKCS#8, unencrypted
            self.assertNotIn("ENCRYPTED", pair["key"], name)
            self.assertTrue(_key_matches_cert(pair["cert"], pair["key"]), name)
        # Four distinct key pairs, the client certificate signed by the cluster CA.
        self.assertEqual(4, len({p["key"] for p in s["certificates"].values()}))
        ca = cx509.load_pem_x509_certificate(s["certificates"]["ca"]["cert"].encode())
        client = cx509.load_pem_x509_certificate(
            s["certificates"]["magnum_client"]["cert"].encode())
        self.assertEqual(ca.subject, client.issuer)

        self.assertEqual("k8s_gitops_v1", ev["magnum"]["driver"])
        self.assertTrue(ev["magnum"]["version"].startswith("15."))

        # Magnum's records: the answer's stack_id on the cluster and (by the conductor) on
        # every node group; CREATE_IN_PROGRESS for the periodic job to follow.
        self.assertEqual("CREATE_IN_PROGRESS", cluster.status)
        self.assertEqual("prod-a-abcdefghijkl", cluster.stack_id)
        for ng in self.groups(cluster).values():
            self.assertEqual("prod-a-abcdefghijkl", ng.stack_id)

    def test_no_secret_in_logs_or_records(self):
        logs = self.useFixture(base.fixtures.FakeLogger(level=10, format="%(message)s"))
        cluster = self.create_cluster()
        secrets = self.rec_posts.events[0]["secrets"]
        needles = [secrets["application_credential"]["secret"], base.TRUSTEE_PASSWORD]
        for pair in secrets["certificates"].values():
            needles += [ln for ln in pair["key"].splitlines() if not ln.startswith("-----")]
        self.assertIn("created application credential", logs.output)  # the capture is live
        stored = json.dumps({f: getattr(cluster, f) for f in cluster.fields
                             if f not in ("cluster_template", "trustee_password")
                             and cluster.obj_attr_is_set(f)}, default=str)
        for needle in needles:
            self.assertNotIn(needle, logs.output)
            if needle != base.TRUSTEE_PASSWORD:  # Magnum's own column
                self.assertNotIn(needle, stored)
        self.assertNotIn("PRIVATE KEY", logs.output)

    def test_ca_bundle_from_drivers_openstack_ca_file(self):
        path = self.useFixture(base.fixtures.TempDir()).path + "/ca.pem"
        with open(path, "w") as f:
            f.write("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
        self.config(openstack_ca_file=path, group="drivers")
        self.create_cluster()
        self.assertIn("MIIB", self.rec_posts.events[0]["secrets"]["ca_bundle"])

    def test_unresolvable_section_is_left_to_the_service(self):
        template = self.make_template(image_id="no-such-image")
        self.create_cluster(template)
        r = self.rec_posts.events[0]["resolved"]
        self.assertNotIn("image", r)
        self.assertIn("networks", r)

    def test_resolution_can_be_switched_off(self):
        self.config(resolve_in_conductor=False, group="gitops")
        self.create_cluster()
        ev = self.rec_posts.events[0]
        self.assertNotIn("resolved", ev)
        self.assertIn("secrets", ev)


class TestCreateFailures(base.DriverTestCase):

    def test_refusal_fails_the_create_verbatim_and_drops_the_app_cred(self):
        message = 'cluster_template.dns_nameserver: "8.8.8" is not an IP address (100% sure)'
        base.Recorded(error=client_mod.service_error(400, message)).patch(self)
        template = self.make_template()
        cluster = self.new_cluster(template)
        self.assertRaises(exception.InvalidParameterValue,
                          self.cluster_handler.cluster_create, self.context, cluster, 1, 2,
                          60)
        cluster = self.reload(cluster)
        self.assertEqual("CREATE_FAILED", cluster.status)
        self.assertEqual(message, cluster.status_reason)
        self.assertEqual({}, self.rec.app_creds)
        self.assertEqual(1, len(self.rec.deleted_app_creds))

    def test_unavailable_keeps_the_app_cred(self):
        err = client_mod.Unavailable(detail="no answer within 5.0s (4 attempt(s) in 20.0s)")
        err.gitops_maybe_received = True
        base.Recorded(error=err).patch(self)
        cluster = self.new_cluster(self.make_template())
        self.assertRaises(client_mod.Unavailable, self.cluster_handler.cluster_create,
                          self.context, cluster, 1, 2, 60)
        cluster = self.reload(cluster)
        self.assertEqual("CREATE_FAILED", cluster.status)
        self.assertEqual("magnum-gitops unavailable: no answer within 5.0s (4 attempt(s) in "
                         "20.0s)", cluster.status_reason)
        self.assertEqual(1, len(self.rec.app_creds))  # the service may hold the event
        self.assertEqual([], self.rec.deleted_app_creds)

    def test_never_connected_drops_the_app_cred(self):
        err = client_mod.Unavailable(detail="cannot connect")
        err.gitops_maybe_received = False
        base.Recorded(error=err).patch(self)
        cluster = self.new_cluster(self.make_template())
        self.assertRaises(client_mod.Unavailable, self.cluster_handler.cluster_create,
                          self.context, cluster, 1, 2, 60)
        self.assertEqual({}, self.rec.app_creds)


class TestOperations(base.DriverTestCase):

    def setUp(self):
        super(TestOperations, self).setUp()
        self.posts = base.Recorded().patch(self)
        self.template = self.make_template()
        self.cluster = self.set_status(self.create_cluster(self.template), "CREATE_COMPLETE")
        self.posts.events.clear()

    def last(self):
        self.assertEqual(1, len(self.posts.events))
        return self.posts.events[-1]

    def test_update_cluster(self):
        self.cluster_handler.cluster_update(self.context, self.cluster, 4, None, None)
        ev = self.last()
        self.assertEqual("update_cluster", ev["operation"])
        self.assertEqual({"node_count": 4}, ev["params"])
        self.assertEqual(4, ev["cluster"]["node_count"])
        self.assertEqual("UPDATE_IN_PROGRESS", ev["cluster"]["status"])
        self.assertNotIn("secrets", ev)
        self.assertEqual("UPDATE_IN_PROGRESS", self.reload(self.cluster).status)
        worker = self.groups(self.cluster)["default-worker"]
        self.assertEqual((4, "UPDATE_IN_PROGRESS"), (worker.node_count, worker.status))

    def test_resize(self):
        worker = self.groups(self.cluster)["default-worker"]
        self.cluster_handler.cluster_resize(self.context, self.cluster, 5, ["n1"], worker)
        ev = self.last()
        self.assertEqual("resize_cluster", ev["operation"])
        self.assertEqual("default-worker", ev["nodegroup"])
        self.assertEqual({"node_count": 5, "nodes_to_remove": ["n1"]}, ev["params"])
        ng = {n["name"]: n for n in ev["nodegroups"]}["default-worker"]
        self.assertEqual((5, "UPDATE_IN_PROGRESS"), (ng["node_count"], ng["status"]))
        self.assertEqual("UPDATE_IN_PROGRESS", self.reload(self.cluster).status)

    def test_upgrade_records_the_new_template(self):
        new = self.make_template(image_id=fakes.IMAGE_NEW_NAME, name="k8s-1.34-ubuntu")
        worker = self.groups(self.cluster)["default-worker"]
        self.cluster_handler.cluster_upgrade(self.context, self.cluster, new, 2, worker)
        ev = self.last()
        self.assertEqual("upgrade_cluster", ev["operation"])
        self.assertEqual(new.uuid, ev["cluster_template"]["uuid"])
        self.assertEqual(new.uuid, ev["cluster"]["cluster_template_id"])
        self.assertEqual({"max_batch_size": 2, "from_template_id": self.template.uuid},
                         ev["params"])
        self.assertEqual(fakes.IMAGE_NEW_ID, ev["resolved"]["image"]["id"])
        self.assertEqual("v1.34.2", ev["resolved"]["image"]["kube_version"])
        # The images a chained upgrade may step through: the newest release of each minor.
        self.assertEqual([{"id": fakes.IMAGE_ID, "kube_version": "v1.33.7", "os_distro": "ubuntu"},
                          {"id": fakes.IMAGE_NEW_ID, "kube_version": "v1.34.2",
                           "os_distro": "ubuntu"}],
                         ev["resolved"]["upgrade_images"])
        self.assertEqual({"UPDATE_IN_PROGRESS"}, {n["status"] for n in ev["nodegroups"]})
        cluster = self.reload(self.cluster)
        self.assertEqual(new.uuid, cluster.cluster_template_id)
        self.assertEqual("UPDATE_IN_PROGRESS", cluster.status)
        self.assertEqual({"UPDATE_IN_PROGRESS"},
                         {ng.status for ng in self.groups(cluster).values()})

    def test_upgrade_refused_keeps_the_old_template(self):
        self.posts.error = client_mod.service_error(409, "another operation is applying")
        new = self.make_template(image_id=fakes.IMAGE_NEW_NAME, name="k8s-1.34-ubuntu")
        worker = self.groups(self.cluster)["default-worker"]
        self.assertRaises(exception.Conflict, self.cluster_handler.cluster_upgrade,
                          self.context, self.cluster, new, 2, worker)
        cluster = self.reload(self.cluster)
        self.assertEqual(self.template.uuid, cluster.cluster_template_id)
        self.assertEqual(("UPDATE_FAILED", "another operation is applying"),
                         (cluster.status, cluster.status_reason))
        self.assertEqual("CREATE_COMPLETE", self.groups(cluster)["default-master"].status)

    def test_delete_marks_every_nodegroup(self):
        self.cluster_handler.cluster_delete(self.context, self.cluster.uuid)
        ev = self.last()
        self.assertEqual("delete_cluster", ev["operation"])
        self.assertEqual("DELETE_IN_PROGRESS", ev["cluster"]["status"])
        self.assertEqual({"DELETE_IN_PROGRESS"}, {n["status"] for n in ev["nodegroups"]})
        self.assertEqual("DELETE_IN_PROGRESS", self.reload(self.cluster).status)
        self.assertEqual({"DELETE_IN_PROGRESS"},
                         {ng.status for ng in self.groups(self.cluster).values()})

    def test_delete_refused_leaves_nodegroups(self):
        self.posts.error = client_mod.service_error(409, "busy")
        self.assertRaises(exception.Conflict, self.cluster_handler.cluster_delete,
                          self.context, self.cluster.uuid)
        self.assertEqual(("DELETE_FAILED", "busy"),
                         (self.reload(self.cluster).status,
                          self.reload(self.cluster).status_reason))
        self.assertEqual({"CREATE_COMPLETE"},
                         {ng.status for ng in self.groups(self.cluster).values()})

    def test_nodegroup_create_update_delete(self):
        ng = self.new_nodegroup(self.cluster, name="gpu", node_count=1, max_node_count=3)
        self.ng_handler.nodegroup_create(self.context, self.cluster, ng)
        ev = self.posts.events[-1]
        self.assertEqual(("create_nodegroup", "gpu"), (ev["operation"], ev["nodegroup"]))
        gpu = {n["name"]: n for n in ev["nodegroups"]}["gpu"]
        self.assertEqual(("CREATE_IN_PROGRESS", "g1.a100", 3),
                         (gpu["status"], gpu["flavor_id"], gpu["max_node_count"]))
        self.assertIn("g1.a100", ev["resolved"]["flavors"])
        self.assertEqual(3, ev["cluster"]["node_count"])  # 2 default workers + 1 gpu
        stored = self.groups(self.cluster)["gpu"]
        self.assertEqual(self.cluster.stack_id, stored.stack_id)

        # The conductor passes the patched node group unsaved: the DB still says 3.
        stored.status = "CREATE_COMPLETE"
        stored.save()
        cluster = self.set_cluster_status("UPDATE_COMPLETE")
        patched = self.groups(cluster)["gpu"]
        patched.max_node_count = 7
        patched.min_node_count = 1
        self.ng_handler.nodegroup_update(self.context, cluster, patched)
        ev = self.posts.events[-1]
        self.assertEqual(("update_nodegroup", "gpu"), (ev["operation"], ev["nodegroup"]))
        gpu = {n["name"]: n for n in ev["nodegroups"]}["gpu"]
        self.assertEqual((7, 1, "UPDATE_IN_PROGRESS"),
                         (gpu["max_node_count"], gpu["min_node_count"], gpu["status"]))
        self.assertEqual(7, self.groups(cluster)["gpu"].max_node_count)

        cluster = self.set_cluster_status("UPDATE_COMPLETE")
        target = self.groups(cluster)["gpu"]
        self.ng_handler.nodegroup_delete(self.context, cluster, target)
        ev = self.posts.events[-1]
        self.assertEqual(("delete_nodegroup", "gpu"), (ev["operation"], ev["nodegroup"]))
        gpu = {n["name"]: n for n in ev["nodegroups"]}["gpu"]
        self.assertEqual("DELETE_IN_PROGRESS", gpu["status"])
        # The conductor changed it in memory only; the driver saved it.
        self.assertEqual("DELETE_IN_PROGRESS", self.groups(cluster)["gpu"].status)
        self.assertEqual("UPDATE_IN_PROGRESS", self.reload(cluster).status)

    def set_cluster_status(self, status):
        c = self.reload(self.cluster)
        c.status = status
        c.save()
        return self.reload(c)

    def test_rotate_ca_restores_the_stored_references(self):
        before = self.reload(self.cluster)
        refs = {f: getattr(before, f) for f in ("ca_cert_ref", "magnum_cert_ref",
                                                 "etcd_ca_cert_ref", "front_proxy_ca_cert_ref")}
        self.assertTrue(all(refs.values()))
        count = len(objects.X509KeyPair.list(self.context))
        self.assertRaises(exception.NotSupported, self.ca_handler.rotate_ca_certificate,
                          self.context, before)
        after = self.reload(self.cluster)
        self.assertEqual("UPDATE_FAILED", after.status)
        self.assertIn("not supported", after.status_reason)
        self.assertEqual(refs, {f: getattr(after, f) for f in refs})
        # The four certificates generated for the refused rotation are gone again.
        self.assertEqual(count, len(objects.X509KeyPair.list(self.context)))
        self.assertEqual([], self.posts.events)

    def test_rotate_credential(self):
        d = gitops_driver.Driver()
        d.rotate_credential(self.context, self.reload(self.cluster))
        ev = self.last()
        self.assertEqual("rotate_credential", ev["operation"])
        (ac_id, ac), = [(k, v) for k, v in self.rec.app_creds.items()
                        if k == ev["secrets"]["application_credential"]["id"]]
        self.assertEqual(ac["secret"], ev["secrets"]["application_credential"]["secret"])
        self.assertNotIn("certificates", ev["secrets"])
        self.assertEqual("UPDATE_IN_PROGRESS", self.reload(self.cluster).status)

    def test_rotate_credential_refused_drops_the_new_app_cred(self):
        self.posts.error = client_mod.service_error(400, "unknown operation")
        before = set(self.rec.app_creds)
        self.assertRaises(exception.InvalidParameterValue,
                          gitops_driver.Driver().rotate_credential, self.context,
                          self.reload(self.cluster))
        self.assertEqual(before, set(self.rec.app_creds))
        self.assertEqual("CREATE_COMPLETE", self.reload(self.cluster).status)


class TestSdkShapedClients(base.DriverTestCase):
    """Magnum master's OpenStackClients hands out openstacksdk proxies."""

    clients = fakes.SdkClients

    def test_create_resolves_through_sdk_proxies(self):
        posts = base.Recorded().patch(self)
        self.create_cluster()
        ev = posts.events[0]
        self.assertEqual({"id": fakes.IMAGE_ID, "kube_version": "v1.33.7",
                          "os_distro": "ubuntu"}, ev["resolved"]["image"])
        self.assertEqual(fakes.VOLUME_TYPES, ev["resolved"]["volume_types"])
        self.assertEqual({"m1.large", "m1.medium"}, set(ev["resolved"]["flavors"]))
        self.assertNotIn("upgrade_images", ev["resolved"])  # a create steps through nothing
        (ac_id,) = self.rec.app_creds
        self.assertTrue(ac_id.startswith("sdk"))
        self.assertEqual(ac_id, ev["secrets"]["application_credential"]["id"])

    def test_upgrade_lists_step_images_through_sdk(self):
        posts = base.Recorded().patch(self)
        cluster = self.set_status(self.create_cluster(self.make_template()), "CREATE_COMPLETE")
        posts.events.clear()
        new = self.make_template(image_id=fakes.IMAGE_NEW_NAME, name="k8s-1.34-ubuntu")
        worker = self.groups(cluster)["default-worker"]
        self.cluster_handler.cluster_upgrade(self.context, cluster, new, 2, worker)
        self.assertEqual([fakes.IMAGE_ID, fakes.IMAGE_NEW_ID],
                         [i["id"] for i in posts.events[-1]["resolved"]["upgrade_images"]])

    def test_refusal_deletes_through_sdk(self):
        base.Recorded(error=client_mod.service_error(422, "no")).patch(self)
        cluster = self.new_cluster(self.make_template())
        self.assertRaises(exception.InvalidParameterValue,
                          self.cluster_handler.cluster_create, self.context, cluster, 1, 2,
                          60)
        self.assertEqual({}, self.rec.app_creds)
        self.assertEqual(1, len(self.rec.deleted_app_creds))
