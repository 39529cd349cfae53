"""Test base: Magnum's own DB-backed fixtures (in-memory sqlite) and the real conductor.

``DriverTestCase`` builds on ``magnum.tests.unit.db.base.DbTestCase``: config parsed with
``sqlite://``, schema created, the notifier and Keystone's trustee domain patched. On top
of that:

- the request context has Keystone-style project and user ids;

- certificates live in the DB (``[certificates] cert_manager_type = x509keypair``), so the
  real generate/get/delete code runs;
- ``magnum.common.clients.OpenStackClients`` is replaced by the fakes in fakes.py;
- Zed's trustee/trust creation is replaced (it needs a real Keystone);
- ``Driver.definitions`` is reset, so driver discovery through the entry points is real.
"""

import logging
import os
import tempfile
import uuid
from unittest import mock

import eventlet
import fixtures

import magnum.conf
from magnum.common import context as magnum_context
from magnum.conductor.handlers import ca_conductor
from magnum.conductor.handlers import cluster_conductor
from magnum.conductor.handlers import nodegroup_conductor
from magnum.drivers.common import driver as base_driver
from magnum import objects
from magnum.service import periodic
from magnum.tests.unit.db import base as db_base
from magnum.tests.unit.objects import utils as obj_utils

from magnum_gitops_driver import client as client_mod
from magnum_gitops_driver import conf as gitops_conf  # registers [gitops]

from tests import fakes

CONF = magnum.conf.CONF

TRUSTEE_PASSWORD = "trustee-password-DO-NOT-LOG"
# Keystone-style ids: the service refuses project ids that cannot name a namespace.
PROJECT_ID = "9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c"
USER_ID = "0c7a4e2b9d8f4a1c8e6b5d4c3b2a1f0e"
CHART_LABELS = {"capi_helm_chart_version": "0.27.0"}

IN_PROGRESS = ["CREATE_IN_PROGRESS", "UPDATE_IN_PROGRESS", "DELETE_IN_PROGRESS",
               "ROLLBACK_IN_PROGRESS"]


def fake_trust(osc, cluster):
    cluster.trustee_username = "%s_%s" % (cluster.uuid, cluster.project_id)
    cluster.trustee_user_id = "trustee-" + cluster.uuid[:8]
    cluster.trustee_password = TRUSTEE_PASSWORD
    cluster.trust_id = "trust-" + cluster.uuid[:8]


class DriverTestCase(db_base.DbTestCase):
    clients = fakes.ZedClients
    endpoint = "http://127.0.0.1:9"
    token = "bearer-token-DO-NOT-LOG"

    def setUp(self):
        super(DriverTestCase, self).setUp()
        # Magnum's TestCase resets pecan's config after each test, which runs
        # logging.config with disable_existing_loggers: switch ours back on, or log
        # assertions would pass vacuously.
        for name, logger in list(logging.root.manager.loggerDict.items()):
            if name.startswith("magnum_gitops_driver") and isinstance(logger, logging.Logger):
                logger.disabled = False
        self.project_id, self.user_id = PROJECT_ID, USER_ID
        self.context = magnum_context.RequestContext(
            auth_token_info={"token": {"project": {"id": PROJECT_ID},
                                       "user": {"id": USER_ID}}},
            project_id=PROJECT_ID, user_id=USER_ID, is_admin=False)
        self.config(cert_manager_type="x509keypair", group="certificates")
        tmp = self.useFixture(fixtures.TempDir()).path
        self.token_file = os.path.join(tmp, "token")
        with open(self.token_file, "w") as f:
            f.write(self.token + "\n")
        self.config(endpoint=self.endpoint, token_file=self.token_file, timeout=5.0,
                    deadline=10.0, retries=3, backoff_initial=0.05, backoff_max=0.2,
                    group=gitops_conf.GROUP)
        base_driver.Driver.definitions = None
        self.addCleanup(setattr, base_driver.Driver, "definitions", None)

        self.rec = fakes.Recorder()
        clients_cls = type("Clients", (self.clients,), {"rec": self.rec})
        self.useFixture(fixtures.MockPatch(
            "magnum.common.clients.OpenStackClients", clients_cls))
        self.notifier = mock.MagicMock()
        self.useFixture(fixtures.MockPatch(
            "magnum.common.rpc.get_notifier", return_value=self.notifier))
        self.useFixture(fixtures.MockPatch(
            "magnum.conductor.handlers.common.trust_manager.create_trustee_and_trust",
            side_effect=fake_trust))
        self.cluster_handler = cluster_conductor.Handler()
        self.ng_handler = nodegroup_conductor.Handler()
        self.ca_handler = ca_conductor.Handler()

    # -- objects ----------------------------------------------------------------------------

    def make_template(self, image_id=fakes.IMAGE_NAME, name="k8s-1.33-ubuntu", labels=None,
                      **kw):
        values = dict(
            uuid=str(uuid.uuid4()), name=name, coe="kubernetes", project_id=self.project_id,
            user_id=self.user_id, server_type="vm", cluster_distro="ubuntu", image_id=image_id,
            flavor_id="m1.medium", master_flavor_id="m1.large", keypair_id="ops-key",
            external_network_id=fakes.EXT_NET, dns_nameserver="8.8.8.8",
            network_driver="calico", docker_storage_driver=None, apiserver_port=None,
            http_proxy=None, https_proxy=None, no_proxy=None, insecure_registry=None,
            labels=dict(CHART_LABELS if labels is None else labels))
        values.update(kw)
        return obj_utils.create_test_cluster_template(self.context, **values)

    def new_cluster(self, template, name="prod-a", **kw):
        values = dict(uuid=str(uuid.uuid4()), name=name, cluster_template_id=template.uuid,
                      project_id=self.project_id, user_id=self.user_id,
                      stack_id=None, status=None, status_reason=None, api_address=None,
                      keypair="ops-key", labels={}, master_flavor_id="m1.large",
                      flavor_id="m1.medium", create_timeout=60)
        values.update(kw)
        return obj_utils.get_test_cluster(self.context, **values)

    def create_cluster(self, template=None, name="prod-a", master_count=1, node_count=2,
                       **kw):
        """Create through the real conductor handler; returns the cluster re-read."""
        template = template or self.make_template()
        cluster = self.new_cluster(template, name=name, **kw)
        self.cluster_handler.cluster_create(self.context, cluster, master_count, node_count,
                                            60)
        return self.reload(cluster)

    def reload(self, cluster):
        return objects.Cluster.get_by_uuid(self.context, cluster.uuid)

    def groups(self, cluster):
        return {ng.name: ng for ng in objects.NodeGroup.list(self.context, cluster.uuid)}

    def set_status(self, cluster, status):
        cluster = self.reload(cluster)
        cluster.status = status
        cluster.save()
        for ng in objects.NodeGroup.list(self.context, cluster.uuid):
            ng.status = status
            ng.save()
        return self.reload(cluster)

    def new_nodegroup(self, cluster, name="gpu", node_count=1, **kw):
        ng = objects.NodeGroup(self.context)
        ng.uuid = str(uuid.uuid4())
        ng.name = name
        ng.cluster_id = cluster.uuid
        ng.project_id = cluster.project_id
        ng.role = kw.pop("role", "worker")
        ng.flavor_id = kw.pop("flavor_id", "g1.a100")
        ng.image_id = kw.pop("image_id", fakes.IMAGE_NAME)
        ng.node_count = node_count
        ng.min_node_count = kw.pop("min_node_count", 0)
        ng.max_node_count = kw.pop("max_node_count", None)
        ng.labels = kw.pop("labels", {})
        ng.is_default = False
        for k, v in kw.items():
            setattr(ng, k, v)
        return ng

    # -- Magnum's periodic jobs -------------------------------------------------------------

    def run_periodic(self, task):
        """Run one of Magnum's real periodic tasks and the jobs it starts.

        The tasks start a FixedIntervalLoopingCall per cluster on eventlet; the jobs run
        when the hub gets control, and end by raising LoopingCallDone (as in production).
        """
        tasks = periodic.MagnumPeriodicTasks(CONF)
        getattr(tasks, task)(None)
        for _ in range(5):
            eventlet.sleep(0)

    def sync_status(self):
        self.run_periodic("sync_cluster_status")

    def sync_health(self):
        self.run_periodic("sync_cluster_health_status")

    @staticmethod
    def admin_context():
        return magnum_context.make_admin_context(all_tenants=True)


class Recorded(object):
    """Replaces Client.post_event: records the events, answers like the service."""

    def __init__(self, answer=None, error=None):
        self.events = []
        self.request_ids = []
        self.answer = answer
        self.error = error

    def __call__(self, client, event, request_id=None):
        self.events.append(event)
        self.request_ids.append(request_id)
        if self.error is not None:
            raise self.error
        if self.answer is not None:
            return dict(self.answer, id=event["id"])
        name = event["cluster"]["name"]
        return {"id": event["id"], "stack_id": event["cluster"].get("stack_id")
                or "%s-abcdefghijkl" % name, "stack_id_generated": True,
                "namespace": "magnum-" + event["cluster"]["project_id"],
                "revision": "0" * 40, "no_op": False, "branch": "main"}

    def patch(self, test):
        recorder = self

        def post_event(client, event, request_id=None):
            return recorder(client, event, request_id)

        test.useFixture(fixtures.MockPatchObject(client_mod.Client, "post_event",
                                                 post_event))
        return self


def tempdir():
    return tempfile.mkdtemp(prefix="magnum-gitops-driver-")
