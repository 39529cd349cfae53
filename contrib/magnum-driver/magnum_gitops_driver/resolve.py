"""OpenStack lookups for the event's ``resolved`` section, in the requesting user's scope.

Works with both client generations Magnum has used: the legacy python-*clients (Magnum
15 to 22: glanceclient, novaclient, cinderclient, keystoneclient) and openstacksdk proxies
(master). Each section is looked up on its own; a section that fails is left out (with a
warning) and the service resolves it or names it as missing.
"""

import re

from oslo_log import log as logging
from oslo_utils import uuidutils

from magnum.common import neutron

LOG = logging.getLogger(__name__)


def _get(obj, key):
    """A property of a glanceclient image (a dict) or an openstacksdk Image."""
    if isinstance(obj, dict):
        return obj.get(key)
    props = getattr(obj, "properties", None) or {}
    value = props.get(key) if isinstance(props, dict) else None
    if value is None:
        value = getattr(obj, key, None)
    return value


def image(osc, image_ref):
    glance = osc.glance()
    if hasattr(glance, "find_image"):  # openstacksdk
        img = glance.find_image(image_ref, ignore_missing=False)
    else:
        from magnum.api import utils as api_utils
        img = api_utils.get_openstack_resource(glance.images, image_ref, "images")
    out = {"id": _get(img, "id")}
    for key in ("kube_version", "os_distro"):
        value = _get(img, key)
        if value:
            out[key] = str(value)
    return out


_RELEASE = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)$")


def _active_images(osc):
    glance = osc.glance()
    if hasattr(glance, "find_image"):  # openstacksdk
        return list(glance.images(status="active"))
    return list(glance.images.list(filters={"status": "active"}))


def upgrade_images(osc):
    """Images a chained upgrade may step through, one Kubernetes minor at a time.

    Of the active images with a kube_version release and an os_distro, the newest of each
    minor version and distribution; the service picks each step's among them.
    """
    best = {}
    for img in _active_images(osc):
        kube, distro, iid = _get(img, "kube_version"), _get(img, "os_distro"), _get(img, "id")
        m = _RELEASE.match(str(kube or ""))
        if not m or not distro or not uuidutils.is_uuid_like(iid):
            continue
        version = tuple(int(x) for x in m.groups())
        key = (str(distro), version[0], version[1])
        if key not in best or best[key][0] < version:
            best[key] = (version, {"id": iid, "kube_version": str(kube), "os_distro": str(distro)})
    return [best[k][1] for k in sorted(best)]


def _flavor_list(osc):
    nova = osc.nova()
    if hasattr(nova, "find_flavor"):  # openstacksdk
        return list(nova.flavors())
    return list(nova.flavors.list())


def flavors(osc, refs):
    """{name-or-id: {vcpus, ram_mb[, disk_gb]}} for each referenced flavor that exists.

    disk_gb (the flavor's root disk, absent when 0) tells the autoscaler what an empty node
    group would offer when its nodes boot from the flavor's disk.
    """
    refs = [r for r in dict.fromkeys(refs) if r]
    if not refs:
        return {}
    out = {}
    all_flavors = _flavor_list(osc)
    for ref in refs:
        for f in all_flavors:
            if ref in (getattr(f, "id", None), getattr(f, "name", None)):
                out[ref] = {"vcpus": int(f.vcpus), "ram_mb": int(f.ram)}
                disk = int(getattr(f, "disk", 0) or 0)
                if disk > 0:
                    out[ref]["disk_gb"] = disk
                break
    return out


def volume_types(osc):
    cinder = osc.cinder()
    if hasattr(cinder, "types") and not hasattr(cinder, "volume_types"):  # openstacksdk
        types = cinder.types()
    else:
        types = cinder.volume_types.list()
    return [t.name for t in types]


def networks(context, external, fixed):
    out = {}
    if external:
        out[external] = neutron.get_external_network_id(context, external)
    if fixed:
        if uuidutils.is_uuid_like(fixed):
            out[fixed] = fixed
        else:
            out[fixed] = neutron.get_network(context, fixed, source="name", target="id",
                                             external=False)
    return out


def subnets(context, fixed_subnet):
    if not fixed_subnet:
        return {}
    return {fixed_subnet: neutron.get_fixed_subnet_id(context, fixed_subnet)}


def resolve(context, osc, cluster, template, groups, interface="public", upgrade=False):
    """The ``resolved`` section: every lookup that succeeded.

    ``upgrade`` (an upgrade_cluster) adds the images a chained upgrade may step through.
    """
    out = {}

    def section(name, fn):
        try:
            value = fn()
        except Exception as e:  # noqa: BLE001 - any lookup failure leaves the section out
            LOG.warning("magnum-gitops: cannot resolve %(s)s for cluster %(c)s, leaving it "
                        "to the service: %(e)s",
                        {"s": name, "c": cluster.uuid, "e": e.__class__.__name__ + ": "
                         + str(e)[:300]})
            return
        if value not in (None, {}, []):
            out[name] = value

    if template is not None and template.image_id:
        section("image", lambda: image(osc, template.image_id))
    if upgrade:
        section("upgrade_images", lambda: upgrade_images(osc))
    fixed_network = cluster.fixed_network or (template.fixed_network if template else None)
    fixed_subnet = cluster.fixed_subnet or (template.fixed_subnet if template else None)
    external = template.external_network_id if template else None
    section("networks", lambda: networks(context, external, fixed_network))
    section("subnets", lambda: subnets(context, fixed_subnet))
    section("volume_types", lambda: volume_types(osc))
    refs = [cluster.master_flavor_id, cluster.flavor_id]
    if template is not None:
        refs += [template.master_flavor_id, template.flavor_id]
    refs += [ng.flavor_id for ng in groups]
    section("flavors", lambda: flavors(osc, refs))
    section("keystone_public_url",
            lambda: osc.url_for(service_type="identity", interface=interface))
    section("region_name", lambda: osc.cinder_region_name())
    return out
