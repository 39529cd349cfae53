"""The application credential, made for real: Magnum's KeystoneClientV3 on the requesting
user's token (the RequestContext carries the token and its body, as magnum-api passes them
to the conductor) against a real Keystone, through python-keystoneclient as
magnum-capi-helm does. Skipped when Debian's python3-keystone is not installed.
"""

import uuid as uuidlib

import fixtures

from keystoneauth1 import exceptions as ka_exceptions
from keystoneclient.v3 import client as kc_v3

from magnum.common import context as magnum_context
from magnum.common import exception
from magnum.common import keystone as magnum_keystone

from magnum_gitops_driver import client as client_mod

from tests import base
from tests import fakes
from tests import keystone as ks_mod


class RealKeystoneClients(fakes.ZedClients):
    """Fake Glance/Neutron/Nova/Cinder; the real Keystone client, catalog and regions."""

    # The session of Magnum's service user ([keystone_auth]), which admin contexts without
    # a token (the periodic jobs) authenticate as.
    service_session = None

    def keystone(self):
        if not hasattr(self, "_ks"):
            self._ks = magnum_keystone.KeystoneClientV3(self.context)
            if self.context.is_admin and not self.context.auth_token:
                self._ks._session = self.service_session
        return self._ks

    def url_for(self, **kwargs):
        return self.keystone().session.get_endpoint(**kwargs)

    def cinder_region_name(self):
        return self.keystone().get_validate_region_name("RegionOne")


class TestRealKeystone(base.DriverTestCase):

    clients = RealKeystoneClients
    ks = None

    @classmethod
    def setUpClass(cls):
        super(TestRealKeystone, cls).setUpClass()
        if ks_mod.available():
            cls.ks = ks_mod.Keystone().start()

    @classmethod
    def tearDownClass(cls):
        if cls.ks is not None:
            cls.ks.stop()
        super(TestRealKeystone, cls).tearDownClass()

    def setUp(self):
        if self.ks is None:
            self.skipTest("python3-keystone is not installed (keystone-manage)")
        super(TestRealKeystone, self).setUp()
        self.logs = self.useFixture(fixtures.FakeLogger(level=10, format="%(message)s"))
        sess = self.ks.session()
        access = sess.auth.get_access(sess)
        # What magnum-api's auth hook hands the conductor: the token and its body.
        self.context = magnum_context.RequestContext(
            auth_token=access.auth_token, auth_token_info=access._data,
            project_id=access.project_id, user_id=access.user_id, is_admin=False)
        self.project_id, self.user_id = access.project_id, access.user_id
        self.admin = kc_v3.Client(session=sess)
        RealKeystoneClients.service_session = sess
        self.addCleanup(setattr, RealKeystoneClients, "service_session", None)

    def app_creds(self):
        return {ac.id: ac for ac in
                self.admin.application_credentials.list(user=self.user_id)}

    def test_create_sends_a_working_application_credential(self):
        posts = base.Recorded().patch(self)
        cluster = self.create_cluster()
        ev = posts.events[0]
        sent = ev["secrets"]["application_credential"]
        ac = self.app_creds()[sent["id"]]
        self.assertTrue(ac.name.startswith("magnum-%s-" % cluster.uuid), ac.name)
        self.assertEqual("Magnum cluster (prod-a)", ac.description)
        self.assertEqual(self.project_id, ac.project_id)
        # The secret authenticates (as CAPO and the cloud provider will).
        s = self.ks.session(app_cred=(sent["id"], sent["secret"]))
        self.assertTrue(s.get_token())
        self.assertEqual(self.project_id, s.get_project_id())
        # Catalog and region from the real Keystone.
        self.assertEqual(self.ks.auth_url, ev["resolved"]["keystone_public_url"])
        self.assertEqual("RegionOne", ev["resolved"]["region_name"])
        self.assertEqual(self.ks.auth_url, ev["context"]["auth_url"])
        self.assertNotIn(sent["secret"], self.logs.output)
        self.assertNotIn(self.context.auth_token, self.logs.output)
        self.assertIn("created application credential %s" % sent["id"], self.logs.output)

    def test_delete_complete_deletes_the_credential_in_keystone(self):
        """A member's cluster: its credential is deleted by Magnum's status job, as
        Magnum's service user (an admin), once the delete is complete."""
        username = "member-%s" % uuidlib.uuid4().hex[:8]
        sess = self.ks.session(username=username, password=self.ks.create_member(username))
        access = sess.auth.get_access(sess)
        self.context = magnum_context.RequestContext(
            auth_token=access.auth_token, auth_token_info=access._data,
            project_id=access.project_id, user_id=access.user_id, is_admin=False)
        self.user_id = access.user_id
        posts = base.Recorded().patch(self)
        cluster = self.create_cluster()
        sent = posts.events[0]["secrets"]["application_credential"]
        self.assertIn(sent["id"], self.app_creds())
        answers = {}
        self.useFixture(fixtures.MockPatchObject(
            client_mod.Client, "get_status",
            lambda client, uuid, request_id=None: answers.get(uuid)))

        self.cluster_handler.cluster_delete(self.context, cluster.uuid)
        answers[cluster.uuid] = {"uuid": cluster.uuid, "event_id": posts.events[-1]["id"],
                                 "status": "DELETE_COMPLETE", "nodegroups": []}
        self.sync_status()
        self.assertRaises(exception.ClusterNotFound, self.reload, cluster)
        self.assertNotIn(sent["id"], self.app_creds())
        s = self.ks.session(app_cred=(sent["id"], sent["secret"]))
        self.assertRaises(ka_exceptions.HttpError, s.get_token)  # 404 (or 401): refused
        self.assertIn("deleted application credential %s of deleted cluster" % sent["id"],
                      self.logs.output)
        self.assertNotIn(sent["secret"], self.logs.output)

    def test_refused_create_deletes_the_credential_in_keystone(self):
        base.Recorded(error=client_mod.service_error(400, "bad event")).patch(self)
        before = set(self.app_creds())
        cluster = self.new_cluster(self.make_template())
        self.assertRaises(exception.InvalidParameterValue,
                          self.cluster_handler.cluster_create, self.context, cluster, 1, 2,
                          60)
        self.assertEqual("bad event", self.reload(cluster).status_reason)
        self.assertEqual(before, set(self.app_creds()))
        self.assertIn("deleted application credential", self.logs.output)
