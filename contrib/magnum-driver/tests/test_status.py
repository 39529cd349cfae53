"""Status and health flowing back into Magnum, through Magnum's real periodic jobs.

Client.get_status is replaced by a lookup table here; test_integration.py reads the real
service.
"""

import fixtures
import testtools

from magnum import objects

from magnum_gitops_driver import client as client_mod
from magnum_gitops_driver import event as event_mod
from magnum_gitops_driver import resolve as resolve_mod
from magnum_gitops_driver import status as status_mod

from tests import base
from tests import fakes


class TestFamilyRule(testtools.TestCase):

    def test_table(self):
        cases = [
            # (Magnum now, service says, recorded)
            ("CREATE_IN_PROGRESS", "CREATE_COMPLETE", "CREATE_COMPLETE"),
            ("CREATE_IN_PROGRESS", "CREATE_FAILED", "CREATE_FAILED"),
            ("CREATE_IN_PROGRESS", "CREATE_IN_PROGRESS", None),
            ("CREATE_IN_PROGRESS", "UPDATE_COMPLETE", None),
            ("UPDATE_IN_PROGRESS", "CREATE_COMPLETE", None),  # stale: the previous operation
            ("UPDATE_IN_PROGRESS", "UPDATE_COMPLETE", "UPDATE_COMPLETE"),
            ("UPDATE_IN_PROGRESS", "UPDATE_FAILED", "UPDATE_FAILED"),
            ("DELETE_IN_PROGRESS", "DELETE_COMPLETE", "DELETE_COMPLETE"),
            ("DELETE_IN_PROGRESS", "UPDATE_COMPLETE", None),
            ("CREATE_COMPLETE", "UPDATE_COMPLETE", None),  # not in an operation
            ("UPDATE_FAILED", "UPDATE_COMPLETE", None),
            ("UPDATE_IN_PROGRESS", None, None),
            ("UPDATE_IN_PROGRESS", "", None),
            (None, "CREATE_COMPLETE", None),
        ]
        for now, says, want in cases:
            self.assertEqual(want, status_mod.family_status(now, says), (now, says))

    def test_health(self):
        self.assertEqual(("HEALTHY", {"cluster": "Ready", "n": "3"}),
                         status_mod.health({"health_status": "HEALTHY",
                                            "health_status_reason": {"cluster": "Ready",
                                                                     "n": 3}}))
        self.assertEqual((None, None), status_mod.health({"health_status": "UNKNOWN"}))
        self.assertEqual((None, None), status_mod.health({}))


class StatusTestCase(base.DriverTestCase):

    def setUp(self):
        super(StatusTestCase, self).setUp()
        self.posts = base.Recorded().patch(self)
        self.docs = {}
        self.reads = []
        test = self

        def get_status(client, uuid, request_id=None):
            test.reads.append(uuid)
            doc = test.docs.get(uuid)
            if isinstance(doc, Exception):
                raise doc
            return doc

        self.useFixture(fixtures.MockPatchObject(client_mod.Client, "get_status",
                                                 get_status))
        self.cluster = self.create_cluster()

    def doc(self, status, reason="", nodegroups=None, **kw):
        """The service's answer; by default about the last event the driver sent."""
        d = {"uuid": self.cluster.uuid, "stack_id": self.cluster.stack_id,
             "event_id": self.posts.events[-1]["id"], "status": status,
             "status_reason": reason,
             "api_address": "https://192.0.2.10:6443", "coe_version": "v1.33.7",
             "node_count": 2, "master_count": 1,
             "nodegroups": nodegroups if nodegroups is not None else [
                 {"name": "default-master", "status": status, "node_count": 1},
                 {"name": "default-worker", "status": status, "node_count": 2}],
             "health_status": "HEALTHY",
             "health_status_reason": {"cluster": "Ready", "infrastructure": "Ready",
                                      "controlplane": "Ready", "nodegroup": "Ready"},
             "secrets_removable": False, "revision": {"desired": "a", "applied": "a"}}
        d.update(kw)
        self.docs[self.cluster.uuid] = d
        return d


class TestUpdateClusterStatus(StatusTestCase):

    def test_create_completes(self):
        self.doc("CREATE_IN_PROGRESS", "waiting for the control plane",
                 api_address=None, coe_version=None)
        self.sync_status()
        c = self.reload(self.cluster)
        self.assertEqual(("CREATE_IN_PROGRESS", "waiting for the control plane"),
                         (c.status, c.status_reason))
        self.assertIsNone(c.api_address)

        self.doc("CREATE_COMPLETE")
        self.sync_status()
        c = self.reload(self.cluster)
        self.assertEqual(("CREATE_COMPLETE", None), (c.status, c.status_reason))
        self.assertEqual("https://192.0.2.10:6443", c.api_address)
        self.assertEqual("v1.33.7", c.coe_version)
        self.assertEqual("HEALTHY", c.health_status)
        self.assertEqual("Ready", c.health_status_reason["controlplane"])
        self.assertEqual({"CREATE_COMPLETE"}, {ng.status for ng in self.groups(c).values()})
        # Magnum's job sent the success notification.
        events = [call.args[1] for call in self.notifier.info.call_args_list]
        self.assertIn("magnum.cluster.create", events)

    def test_create_fails_with_the_reason(self):
        self.doc("CREATE_FAILED", "Machine prod-a-md-0-x: Quota exceeded for instances")
        self.sync_status()
        c = self.reload(self.cluster)
        self.assertEqual(("CREATE_FAILED",
                          "Machine prod-a-md-0-x: Quota exceeded for instances"),
                         (c.status, c.status_reason))

    def test_stale_answer_about_the_previous_operation_is_ignored(self):
        c = self.set_status(self.cluster, "UPDATE_IN_PROGRESS")
        self.doc("CREATE_COMPLETE", "old")
        self.sync_status()
        c = self.reload(c)
        self.assertEqual("UPDATE_IN_PROGRESS", c.status)
        self.assertNotEqual("old", c.status_reason)
        self.assertEqual({"UPDATE_IN_PROGRESS"}, {ng.status for ng in self.groups(c).values()})
        # Non-status fields are still copied.
        self.assertEqual("https://192.0.2.10:6443", c.api_address)

    def test_unknown_or_unreachable_changes_nothing(self):
        self.sync_status()  # no document: 404
        self.docs[self.cluster.uuid] = client_mod.Unavailable(detail="down")
        self.sync_status()
        self.assertEqual([self.cluster.uuid] * 2, self.reads)
        c = self.reload(self.cluster)
        self.assertEqual("CREATE_IN_PROGRESS", c.status)
        self.assertIsNone(c.health_status)

    def test_counts_follow_only_outside_an_operation(self):
        c = self.set_status(self.cluster, "UPDATE_IN_PROGRESS")
        self.doc("UPDATE_IN_PROGRESS", nodegroups=[
            {"name": "default-worker", "status": "UPDATE_IN_PROGRESS", "node_count": 7}])
        self.sync_status()
        self.assertEqual(2, self.groups(c)["default-worker"].node_count)
        self.doc("UPDATE_COMPLETE", nodegroups=[
            {"name": "default-worker", "status": "UPDATE_COMPLETE", "node_count": 3}])
        self.sync_status()
        w = self.groups(c)["default-worker"]
        self.assertEqual(("UPDATE_COMPLETE", 3), (w.status, w.node_count))

    def test_deleted_nodegroup_is_destroyed_when_gone(self):
        c = self.set_status(self.cluster, "UPDATE_COMPLETE")
        ng = self.new_nodegroup(c, name="gpu")
        self.ng_handler.nodegroup_create(self.context, c, ng)
        c = self.set_status(c, "UPDATE_COMPLETE")
        self.ng_handler.nodegroup_delete(self.context, c, self.groups(c)["gpu"])
        self.assertEqual("DELETE_IN_PROGRESS", self.groups(c)["gpu"].status)

        rows = [{"name": "default-master", "status": "UPDATE_COMPLETE", "node_count": 1},
                {"name": "default-worker", "status": "UPDATE_COMPLETE", "node_count": 2}]
        self.doc("UPDATE_IN_PROGRESS", nodegroups=rows + [
            {"name": "gpu", "status": "DELETE_IN_PROGRESS", "node_count": 1}])
        self.sync_status()
        self.assertIn("gpu", self.groups(c))

        # "gone" destroys only a non-default group being deleted.
        self.doc("UPDATE_COMPLETE", nodegroups=[
            dict(rows[0], gone=True), dict(rows[1]),
            {"name": "gpu", "status": "DELETE_COMPLETE", "node_count": 0, "gone": True}])
        self.sync_status()
        self.assertEqual({"default-master", "default-worker"}, set(self.groups(c)))
        self.assertEqual("UPDATE_COMPLETE", self.reload(c).status)

    def test_delete_complete_cleans_up_and_magnum_removes_the_rows(self):
        c = self.set_status(self.cluster, "CREATE_COMPLETE")
        refs = [c.ca_cert_ref, c.magnum_cert_ref, c.etcd_ca_cert_ref,
                c.front_proxy_ca_cert_ref]
        self.assertEqual(4, len([r for r in refs if r]))
        stored = {kp.uuid for kp in objects.X509KeyPair.list(self.context)}
        self.assertTrue(set(refs) <= stored)
        keystone_deleted = {}
        self.useFixture(fixtures.MockPatch(
            "magnum.conductor.handlers.common.trust_manager.delete_trustee_and_trust",
            side_effect=lambda osc, ctx, cl: keystone_deleted.update(trust=cl.trust_id)))

        self.cluster_handler.cluster_delete(self.context, c.uuid)
        self.doc("DELETE_IN_PROGRESS", "Cluster is deleting")
        self.sync_status()
        self.assertEqual("DELETE_IN_PROGRESS", self.reload(c).status)
        self.doc("DELETE_COMPLETE", secrets_removable=True, nodegroups=[])
        self.sync_status()
        self.assertRaises(Exception, self.reload, c)  # rows destroyed by Magnum's job
        self.assertEqual([], objects.NodeGroup.list(self.admin_context(), c.uuid))
        left = {kp.uuid for kp in objects.X509KeyPair.list(self.admin_context())}
        self.assertEqual(set(), set(refs) & left)  # all four (Zed removes none itself)
        self.assertEqual({"trust": c.trust_id}, keystone_deleted)


class TestDeleteRemovesAppCreds(StatusTestCase):
    """The application credential create_cluster made with the user's token is deleted
    once the delete is complete (issue 29, defect 3): Magnum never deletes it, and serve
    deletes only the credentials it made itself."""

    def complete_delete(self):
        self.cluster_handler.cluster_delete(self.context, self.cluster.uuid)
        self.doc("DELETE_IN_PROGRESS", "Cluster is deleting")
        self.sync_status()
        self.doc("DELETE_COMPLETE", secrets_removable=True, nodegroups=[])
        self.sync_status()

    def test_deleted_when_the_delete_completes(self):
        (made,) = self.rec.app_creds
        other = "magnum-%s-0badc0de" % "5c2f8e41-7b3d-4a9e-8f60-1d2c3b4a5e6f"
        self.rec.app_creds["ac-other-cluster"] = {"user": base.USER_ID, "name": other}
        self.rec.app_creds["ac-other-user"] = {
            "user": "someone-else", "name": "magnum-%s-0badc0de" % self.cluster.uuid}

        self.cluster_handler.cluster_delete(self.context, self.cluster.uuid)
        self.doc("DELETE_IN_PROGRESS", "Cluster is deleting")
        self.sync_status()
        self.assertIn(made, self.rec.app_creds)  # CAPO deletes the servers with it
        self.doc("DELETE_COMPLETE", secrets_removable=True, nodegroups=[])
        self.sync_status()
        self.assertRaises(Exception, self.reload, self.cluster)  # Magnum destroyed the rows
        self.assertEqual([made], self.rec.deleted_app_creds)
        self.assertEqual({"ac-other-cluster", "ac-other-user"}, set(self.rec.app_creds))
        # Listed for the cluster's user, from the status job's admin context (no user).
        self.assertEqual([base.USER_ID], self.rec.listed_users)

    def test_keystone_failure_keeps_the_delete_in_progress_until_a_retry_works(self):
        (made,) = self.rec.app_creds
        self.rec.keystone_error = RuntimeError("keystone: 503 Service Unavailable")
        self.complete_delete()
        c = self.reload(self.cluster)  # not destroyed: the next pass tries again
        self.assertEqual("DELETE_IN_PROGRESS", c.status)
        self.assertIn("application credential", c.status_reason)
        self.assertTrue(c.etcd_ca_cert_ref)  # nothing else done yet
        self.rec.keystone_error = None
        self.sync_status()
        self.assertRaises(Exception, self.reload, self.cluster)
        self.assertEqual([made], self.rec.deleted_app_creds)

    def test_a_credential_already_gone_is_no_failure(self):
        self.rec.app_creds.clear()  # deleted by hand, or by an earlier pass
        self.complete_delete()
        self.assertRaises(Exception, self.reload, self.cluster)
        self.assertEqual([], self.rec.deleted_app_creds)

    def test_no_trust_is_needed(self):
        from magnum_gitops_driver import driver as gitops_driver
        self.assertIs(False, gitops_driver.Driver.needs_trust)
        # A Magnum that honours needs_trust made no trust: the delete completes without
        # asking Keystone about one.
        c = self.reload(self.cluster)
        c.trust_id = c.trustee_user_id = c.trustee_username = c.trustee_password = None
        c.save()
        trusts = self.useFixture(fixtures.MockPatch(
            "magnum.conductor.handlers.common.trust_manager.delete_trustee_and_trust"))
        self.complete_delete()
        self.assertRaises(Exception, self.reload, self.cluster)
        trusts.mock.assert_not_called()
        self.assertEqual(1, len(self.rec.deleted_app_creds))


class TestDeleteRemovesAppCredsSdk(TestDeleteRemovesAppCreds):
    """The same through master's openstacksdk identity proxy."""

    clients = fakes.SdkClients


class TestEventRule(StatusTestCase):
    """A status is taken only from the answer about the event of the operation in flight."""

    ROWS = [{"name": "default-master", "status": "UPDATE_COMPLETE", "node_count": 1},
            {"name": "default-worker", "status": "UPDATE_COMPLETE", "node_count": 2}]

    def test_answer_about_another_event_changes_no_status(self):
        c = self.set_status(self.cluster, "UPDATE_IN_PROGRESS")
        self.doc("UPDATE_COMPLETE", "done", event_id="the-previous-event",
                 nodegroups=self.ROWS)
        self.sync_status()
        c = self.reload(c)
        self.assertEqual(("UPDATE_IN_PROGRESS", None), (c.status, c.status_reason))
        self.assertEqual({"UPDATE_IN_PROGRESS"}, {ng.status for ng in self.groups(c).values()})
        self.assertEqual("https://192.0.2.10:6443", c.api_address)  # not a status
        self.doc("UPDATE_COMPLETE", "done", nodegroups=self.ROWS)  # about the last event
        self.sync_status()
        c = self.reload(c)
        self.assertEqual(("UPDATE_COMPLETE", "done"), (c.status, c.status_reason))
        self.assertEqual({"UPDATE_COMPLETE"}, {ng.status for ng in self.groups(c).values()})

    def test_status_pass_before_the_driver_records_its_event(self):
        """Magnum saves the cluster UPDATE_IN_PROGRESS before it even picks the driver (it
        reads the template and may ask Glance); a status pass in that window has only the
        answer about the previous event, whose final status was taken already."""
        self.doc("UPDATE_COMPLETE", "the previous operation", nodegroups=self.ROWS)
        c = self.set_status(self.cluster, "UPDATE_IN_PROGRESS")
        self.sync_status()  # the previous operation completes
        c = self.reload(c)
        self.assertEqual("UPDATE_COMPLETE", c.status)
        self.assertTrue(event_mod.event_done(c))
        previous = event_mod.recorded_event(c)
        c = self.set_status(c, "UPDATE_IN_PROGRESS")  # the next operation, not sent yet
        self.sync_status()
        c = self.reload(c)
        self.assertEqual("UPDATE_IN_PROGRESS", c.status)
        self.assertEqual({"UPDATE_IN_PROGRESS"}, {ng.status for ng in self.groups(c).values()})
        self.assertEqual(previous, event_mod.recorded_event(c))
        self.assertEqual("https://192.0.2.10:6443", c.api_address)  # not a status
        # The driver records and sends the new event: its answer is taken.
        self.cluster_handler.cluster_resize(self.context, c, 3, [], self.groups(c)["default-worker"])
        sent = self.posts.events[-1]
        self.assertNotEqual(previous, sent["id"])
        self.doc("UPDATE_COMPLETE", "resized", nodegroups=self.ROWS)
        self.sync_status()
        c = self.reload(c)
        self.assertEqual(("UPDATE_COMPLETE", "resized"), (c.status, c.status_reason))
        self.assertEqual(sent["id"], event_mod.recorded_event(c))

    def test_status_pass_during_the_lookups_keeps_nodegroup_operations_in_progress(self):
        """Magnum saves the cluster UPDATE_IN_PROGRESS before it calls the driver, whose
        look-ups take seconds against a real cloud; another conductor's status pass in that
        window reads the service's answer about the previous event (UPDATE_COMPLETE)."""
        during = []
        real = resolve_mod.resolve
        test = self

        def resolve(*args, **kwargs):
            test.sync_status()  # Magnum's periodic job, from the database, mid-operation
            c = test.reload(test.cluster)
            during.append((c.status, test.groups(c)["gpu"].status,
                           event_mod.recorded_event(c)))
            return real(*args, **kwargs)

        self.useFixture(fixtures.MockPatch("magnum_gitops_driver.resolve.resolve",
                                           side_effect=resolve))

        def create(c):
            self.ng_handler.nodegroup_create(self.context, c, self.new_nodegroup(c, "gpu"))

        def update(c):
            patched = self.groups(c)["gpu"]
            patched.max_node_count = 5  # the conductor hands it over unsaved
            self.ng_handler.nodegroup_update(self.context, c, patched)

        def delete(c):
            self.ng_handler.nodegroup_delete(self.context, c, self.groups(c)["gpu"])

        gpu = {"name": "gpu", "node_count": 1}
        self.doc("UPDATE_COMPLETE", nodegroups=self.ROWS)
        c = self.set_status(self.cluster, "UPDATE_COMPLETE")
        for op, run, pending, done in (
                ("create_nodegroup", create, "CREATE_IN_PROGRESS", "CREATE_COMPLETE"),
                ("update_nodegroup", update, "UPDATE_IN_PROGRESS", "UPDATE_COMPLETE"),
                ("delete_nodegroup", delete, "DELETE_IN_PROGRESS", "DELETE_COMPLETE")):
            del during[:]
            run(self.reload(c))  # the answer about the previous event stays
            sent = self.posts.events[-1]
            self.assertEqual(op, sent["operation"])
            self.assertEqual([("UPDATE_IN_PROGRESS", pending, sent["id"])], during, op)
            self.assertNotIn("container_version", sent["cluster"], op)
            self.sync_status()  # still the previous event's answer
            self.assertEqual("UPDATE_IN_PROGRESS", self.reload(c).status, op)
            self.assertEqual(pending, self.groups(c)["gpu"].status, op)

            self.doc("UPDATE_COMPLETE", nodegroups=self.ROWS + [
                dict(gpu, status=done, gone=done == "DELETE_COMPLETE")])
            self.sync_status()
            self.assertEqual("UPDATE_COMPLETE", self.reload(c).status, op)
            if done == "DELETE_COMPLETE":
                self.assertNotIn("gpu", self.groups(c), op)
            else:
                self.assertEqual(done, self.groups(c)["gpu"].status, op)


class TestHealth(StatusTestCase):

    def test_health_job_stores_health(self):
        c = self.set_status(self.cluster, "CREATE_COMPLETE")
        self.doc("CREATE_COMPLETE", health_status="UNHEALTHY",
                 health_status_reason={"cluster": "Ready", "nodegroup":
                                       "MachineDeployment default-worker: 1 of 2 ready"})
        self.sync_health()
        c = self.reload(c)
        self.assertEqual("UNHEALTHY", c.health_status)
        self.assertEqual("MachineDeployment default-worker: 1 of 2 ready",
                         c.health_status_reason["nodegroup"])

    def test_unknown_health_keeps_the_last_known(self):
        c = self.set_status(self.cluster, "CREATE_COMPLETE")
        self.doc("CREATE_COMPLETE")
        self.sync_health()
        self.assertEqual("HEALTHY", self.reload(c).health_status)
        self.doc("CREATE_COMPLETE", health_status="UNKNOWN",
                 health_status_reason={"cluster": "management cluster unreachable"})
        self.sync_health()
        self.assertEqual("HEALTHY", self.reload(c).health_status)
        self.docs[c.uuid] = client_mod.Unavailable(detail="down")
        self.sync_health()
        self.assertEqual("HEALTHY", self.reload(c).health_status)

    def test_health_job_lets_counts_follow_the_autoscaler(self):
        c = self.set_status(self.cluster, "UPDATE_COMPLETE")
        self.doc("UPDATE_COMPLETE", nodegroups=[
            {"name": "default-master", "status": "UPDATE_COMPLETE", "node_count": 1},
            {"name": "default-worker", "status": "UPDATE_COMPLETE", "node_count": 5}])
        self.sync_health()
        self.assertEqual(5, self.groups(c)["default-worker"].node_count)
        self.assertEqual("UPDATE_COMPLETE", self.reload(c).status)
