"""Stand-ins for the OpenStack clients Magnum's OpenStackClients hands out.

Two shapes: the legacy python-*clients of Magnum 15-22 (glanceclient images are dicts,
neutronclient returns {"networks": [...]}, novaclient/cinderclient managers with list(),
keystoneclient managers) and openstacksdk proxies (master). Only what the driver and
Magnum's neutron helpers call is implemented; anything else raises AttributeError.
"""

import itertools
import types

IMAGE_NAME = "ubuntu-2404-kube-v1.33.7"
IMAGE_ID = "1d2c3b4a-5e6f-4a7b-8c9d-0e1f2a3b4c5d"
IMAGE_NEW_NAME = "ubuntu-2404-kube-v1.34.2"
IMAGE_NEW_ID = "2e3d4c5b-6f70-4b8c-9d0e-1f2a3b4c5d6e"
EXT_NET = "public"
EXT_NET_ID = "d1f02cfb-d27f-4068-9332-84d907cb0e2e"
FIXED_NET = "private"
FIXED_NET_ID = "7b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e"
FIXED_SUBNET = "private-subnet"
FIXED_SUBNET_ID = "8c2d3e4f-5a6b-4c7d-9e8f-0a1b2c3d4e5f"
KEYSTONE_URL = "https://keystone.example.org:5000/v3"
REGION = "RegionOne"
APP_CRED_SECRET_PREFIX = "appcred-secret-DO-NOT-LOG-"

IMAGE_OLD_PATCH_ID = "3f4e5d6c-7081-4c9d-8eaf-2a3b4c5d6e7f"
IMAGE_K3S_ID = "4a5f6e7d-8192-4dae-9fb0-3b4c5d6e7f80"
IMAGES = {
    IMAGE_ID: {"id": IMAGE_ID, "name": IMAGE_NAME, "kube_version": "v1.33.7",
               "os_distro": "ubuntu"},
    IMAGE_NEW_ID: {"id": IMAGE_NEW_ID, "name": IMAGE_NEW_NAME, "kube_version": "v1.34.2",
                   "os_distro": "ubuntu"},
    # Older patch of a minor listed above, and a version that is no Kubernetes release:
    # neither is a step of a chained upgrade.
    IMAGE_OLD_PATCH_ID: {"id": IMAGE_OLD_PATCH_ID, "name": "ubuntu-2404-kube-v1.34.1",
                         "kube_version": "v1.34.1", "os_distro": "ubuntu"},
    IMAGE_K3S_ID: {"id": IMAGE_K3S_ID, "name": "k3s", "kube_version": "v1.35.0+k3s1",
                   "os_distro": "ubuntu"},
}
NETWORKS = [
    {"id": EXT_NET_ID, "name": EXT_NET, "router:external": True},
    {"id": FIXED_NET_ID, "name": FIXED_NET, "router:external": False},
]
SUBNETS = [{"id": FIXED_SUBNET_ID, "name": FIXED_SUBNET}]
FLAVORS = [
    ("11111111-0000-4000-8000-000000000001", "m1.small", 1, 2048),
    ("11111111-0000-4000-8000-000000000002", "m1.medium", 2, 4096),
    ("11111111-0000-4000-8000-000000000003", "m1.large", 4, 8192),
    ("11111111-0000-4000-8000-000000000004", "g1.a100", 16, 131072),
]
VOLUME_TYPES = ["__DEFAULT__", "ssd.fast"]


class Recorder(object):
    """What the fakes were asked to do, shared by every OpenStackClients instance."""

    def __init__(self):
        self.app_creds = {}      # id -> {"user", "name", "description", "secret"}
        self.deleted_app_creds = []
        self.listed_users = []   # whose application credentials were listed
        # Raised by the next application credential call when set (Keystone down).
        self.keystone_error = None
        self.counter = itertools.count(1)

    def check(self):
        if self.keystone_error is not None:
            raise self.keystone_error


class NotFound(Exception):
    """A 404 as python-keystoneclient (keystoneauth) raises it."""

    http_status = 404


def _listed(rec, user):
    rec.check()
    rec.listed_users.append(user)
    return [types.SimpleNamespace(id=ac_id, name=ac["name"])
            for ac_id, ac in rec.app_creds.items() if ac["user"] == user]


def _delete(rec, ac_id):
    rec.check()
    if ac_id not in rec.app_creds:
        raise NotFound("Could not find application credential: %s." % ac_id)
    rec.app_creds.pop(ac_id)
    rec.deleted_app_creds.append(ac_id)


def _flavor(row):
    fid, name, vcpus, ram = row
    return types.SimpleNamespace(id=fid, name=name, vcpus=vcpus, ram=ram)


# -- legacy python-*clients (Magnum 15-22) -------------------------------------------------


class _Images(object):
    def get(self, image_id):
        if image_id not in IMAGES:
            raise LookupError("image %s not found" % image_id)
        return dict(IMAGES[image_id])

    def list(self, filters=None):
        name = (filters or {}).get("name")
        return [dict(i) for i in IMAGES.values() if name in (None, i["name"])]


class _Neutron(object):
    def list_networks(self, **filters):
        out = [n for n in NETWORKS
               if all(n.get(k) == v for k, v in filters.items())]
        return {"networks": out}

    def list_subnets(self, **filters):
        return {"subnets": [s for s in SUBNETS
                            if all(s.get(k) == v for k, v in filters.items())]}


class _Manager(object):
    def __init__(self, items):
        self._items = items

    def list(self):
        return list(self._items)


class _AppCreds(object):
    def __init__(self, rec):
        self.rec = rec

    def create(self, name, user=None, secret=None, description=None, **kwargs):
        n = next(self.rec.counter)
        ac_id = "ac%030d" % n
        ac_secret = "%s%d" % (APP_CRED_SECRET_PREFIX, n)
        self.rec.app_creds[ac_id] = {"user": user, "name": name,
                                     "description": description, "secret": ac_secret}
        return types.SimpleNamespace(id=ac_id, secret=ac_secret, name=name)

    def list(self, user=None):
        return _listed(self.rec, user)

    def delete(self, app_cred, user=None):
        _delete(self.rec, app_cred)


class _Keystone(object):
    # Zed's DB tenant filter asks for it (Magnum's TestCase patches the real client's).
    trustee_domain_id = "12345678-9012-3456-7890-123456789abc"

    def __init__(self, rec):
        self.client = types.SimpleNamespace(application_credentials=_AppCreds(rec))
        self.deleted_trusts = rec

    def delete_trust(self, context, cluster):
        self.deleted_trusts.deleted_trust = cluster.trust_id

    def delete_trustee(self, trustee_id):
        self.deleted_trusts.deleted_trustee = trustee_id


class ZedClients(object):
    """Replaces magnum.common.clients.OpenStackClients (built per context)."""

    rec = None  # set per test

    def __init__(self, context):
        self.context = context

    def glance(self):
        return types.SimpleNamespace(images=_Images())

    def neutron(self):
        return _Neutron()

    def nova(self):
        return types.SimpleNamespace(flavors=_Manager([_flavor(f) for f in FLAVORS]))

    def cinder(self):
        return types.SimpleNamespace(
            volume_types=_Manager([types.SimpleNamespace(name=n) for n in VOLUME_TYPES]))

    def keystone(self):
        return _Keystone(self.rec)

    def url_for(self, service_type=None, interface=None, **kwargs):
        assert service_type == "identity", service_type
        return KEYSTONE_URL

    def cinder_region_name(self):
        return REGION


# -- openstacksdk proxies (Magnum master) ------------------------------------------------------


class _SdkImage(object):
    """openstacksdk Image: known properties as attributes, others in .properties."""

    def __init__(self, d):
        self.id = d["id"]
        self.name = d["name"]
        self.os_distro = d["os_distro"]
        self.properties = {"kube_version": d["kube_version"]}


class _SdkImageProxy(object):
    def images(self, **query):
        return iter([_SdkImage(d) for d in IMAGES.values()])

    def find_image(self, name_or_id, ignore_missing=True):
        for d in IMAGES.values():
            if name_or_id in (d["id"], d["name"]):
                return _SdkImage(d)
        if ignore_missing:
            return None
        raise LookupError(name_or_id)


class _SdkCompute(object):
    def flavors(self, **query):
        return iter([_flavor(f) for f in FLAVORS])

    def find_flavor(self, name_or_id, ignore_missing=True):
        raise AssertionError("not used")


class _SdkBlockStorage(object):
    def types(self, **query):
        return iter([types.SimpleNamespace(name=n) for n in VOLUME_TYPES])


class _SdkIdentity(object):
    def __init__(self, rec):
        self.rec = rec

    def create_application_credential(self, user, name, **attrs):
        n = next(self.rec.counter)
        ac_id = "sdk%029d" % n
        ac_secret = "%s%d" % (APP_CRED_SECRET_PREFIX, n)
        self.rec.app_creds[ac_id] = {"user": user, "name": name,
                                     "description": attrs.get("description"),
                                     "secret": ac_secret}
        return types.SimpleNamespace(id=ac_id, secret=ac_secret, name=name)

    def application_credentials(self, user, **query):
        return iter(_listed(self.rec, user))

    def delete_application_credential(self, user, application_credential,
                                      ignore_missing=True):
        try:
            _delete(self.rec, application_credential)
        except NotFound:
            if not ignore_missing:
                raise


class SdkClients(ZedClients):
    """Magnum master's OpenStackClients: services are openstacksdk proxies.

    neutron() stays legacy-shaped: only the installed Magnum's own neutron helpers call it,
    and they match the installed client generation.
    """

    def glance(self):
        return _SdkImageProxy()

    def nova(self):
        return _SdkCompute()

    def cinder(self):
        return _SdkBlockStorage()

    def keystone(self):
        return types.SimpleNamespace(client=_SdkIdentity(self.rec),
                                     trustee_domain_id=_Keystone.trustee_domain_id)
