"""Build ClusterEvent documents (magnum-gitops.io/v1alpha1) from Magnum objects.

Pure mapping plus the node group listing: no OpenStack calls, no HTTP. The conductor's
objects are serialised field by field (whatever fields this Magnum release has), minus the
certificate references and trust credentials, which never leave Magnum.
"""

import datetime
import socket
import uuid as uuidlib

from magnum_gitops_driver import DRIVER_NAME

API_VERSION = "magnum-gitops.io/v1alpha1"
KIND = "ClusterEvent"

OPERATIONS = (
    "create_cluster", "update_cluster", "resize_cluster", "upgrade_cluster", "delete_cluster",
    "create_nodegroup", "update_nodegroup", "delete_nodegroup", "rotate_credential",
)

# Cluster fields that never leave Magnum: references into its certificate store and the
# trustee's credentials (Magnum <= 22).
CLUSTER_EXCLUDED = frozenset([
    "id", "cluster_template", "nodegroups",
    "ca_cert_ref", "magnum_cert_ref", "etcd_ca_cert_ref", "front_proxy_ca_cert_ref",
    "trust_id", "trustee_username", "trustee_password", "trustee_user_id",
])
TEMPLATE_EXCLUDED = frozenset(["id"])
NODEGROUP_EXCLUDED = frozenset(["id"])

IN_PROGRESS = {
    "create_cluster": "CREATE_IN_PROGRESS",
    "delete_cluster": "DELETE_IN_PROGRESS",
}


def magnum_version():
    try:
        from magnum import version
        return version.version_info.release_string()
    except Exception:  # pragma: no cover - packaging without pbr metadata
        return None


def magnum_major():
    """Magnum's major version (15 for Zed), or None when unknown."""
    v = magnum_version()
    try:
        return int(str(v).split(".")[0])
    except (TypeError, ValueError):
        return None


def rfc3339(value):
    if value is None:
        return None
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.timezone.utc)
        return value.isoformat()
    return str(value)


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()


def labels(value):
    """Magnum labels as a string map (str() of non-strings, as Magnum would store them)."""
    if not value:
        return {}
    return {str(k): v if isinstance(v, str) else str(v) for k, v in dict(value).items()}


def _plain(value):
    if isinstance(value, datetime.datetime):
        return rfc3339(value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def serialize(obj, excluded=frozenset()):
    """Every set field of a Magnum versioned object, as JSON-ready values."""
    out = {}
    for name in sorted(obj.fields):
        if name in excluded or not obj.obj_attr_is_set(name):
            continue
        value = getattr(obj, name)
        if name == "labels":
            value = labels(value)
        out[name] = _plain(value)
    return out


def nodegroups_with(cluster, nodegroup=None, listed=None):
    """The cluster's node groups in Magnum's order, ``nodegroup`` substituted by uuid.

    The conductor hands some calls a patched but unsaved node group (update_nodegroup), or
    one whose status it changed only in memory (delete_nodegroup); a fresh DB listing would
    carry the old values, so the object passed in wins.
    """
    groups = list(cluster.nodegroups if listed is None else listed)
    if nodegroup is None:
        return groups
    for i, ng in enumerate(groups):
        if ng.uuid == nodegroup.uuid:
            groups[i] = nodegroup
            return groups
    groups.append(nodegroup)
    return groups


def counts(groups):
    master = sum(ng.node_count or 0 for ng in groups if ng.role == "master")
    workers = sum(ng.node_count or 0 for ng in groups if ng.role != "master")
    return master, workers


def new_event_id():
    return str(uuidlib.uuid4())


# The event of the operation in flight is recorded in the cluster's container_version, in
# Magnum's database, where the periodic status job of every conductor reads it: Magnum
# gives drivers no field of their own, and this one is the least seen. Magnum writes it
# for Heat drivers only, its API serves it read-only, Terraform treats it as computed (no
# plan ever changes because of it; labels or discovery_url would force a new cluster), and
# magnum-gitops reports no container version. `openstack coe cluster show` shows the marker.
EVENT_FIELD = "container_version"
EVENT_MARKER = "magnum-gitops-event:"


# Appended to the marker once the status job has taken the event's final status: Magnum
# accepts no new operation on a cluster in progress, so that is saved before any other
# operation can start, and a cluster in progress whose recorded event is done is in an
# operation whose event the driver has not recorded yet.
EVENT_DONE = "+done"


def record_event(cluster, event_id):
    """Mark ``event_id`` as the cluster's operation in flight (the caller saves).

    Returns False when this Magnum's Cluster has no such field (nothing recorded).
    """
    if EVENT_FIELD not in cluster.fields:
        return False
    setattr(cluster, EVENT_FIELD, EVENT_MARKER + event_id)
    return True


def _recorded(cluster):
    if EVENT_FIELD not in cluster.fields or not cluster.obj_attr_is_set(EVENT_FIELD):
        return ""
    value = getattr(cluster, EVENT_FIELD) or ""
    return value[len(EVENT_MARKER):] if value.startswith(EVENT_MARKER) else ""


def recorded_event(cluster):
    """The event id record_event left on the cluster, or None (nothing recorded: a
    cluster whose operation a driver without this record started)."""
    value = _recorded(cluster)
    if value.endswith(EVENT_DONE):
        value = value[:-len(EVENT_DONE)]
    return value or None


def event_done(cluster):
    """Whether the status job took the final status of the recorded event (mark_done)."""
    return _recorded(cluster).endswith(EVENT_DONE) and recorded_event(cluster) is not None


def mark_done(cluster):
    """Note, with the final status the caller saves, that the recorded event is over."""
    if recorded_event(cluster) is not None and not event_done(cluster):
        setattr(cluster, EVENT_FIELD, EVENT_MARKER + recorded_event(cluster) + EVENT_DONE)


def build(operation, context, cluster, template, groups, nodegroup=None, params=None,
          resolved=None, secrets=None, event_id=None, conductor_host=None):
    """A ClusterEvent for one driver call.

    ``cluster`` describes the state after the call as Magnum will record it: its status is
    the operation's IN_PROGRESS status and updated_at is now (the service measures the
    operation's deadline from it).
    """
    if operation not in OPERATIONS:
        raise ValueError("unknown operation %r" % operation)
    c = serialize(cluster, CLUSTER_EXCLUDED)
    if recorded_event(cluster) is not None:
        c.pop(EVENT_FIELD, None)  # the driver's bookkeeping, not the cluster's
    master_count, node_count = counts(groups)
    c["master_count"] = master_count
    c["node_count"] = node_count
    c["labels"] = labels(getattr(cluster, "labels", None))
    c["status"] = IN_PROGRESS.get(operation, "UPDATE_IN_PROGRESS")
    c["status_reason"] = None
    c["updated_at"] = now_rfc3339()
    if template is not None and getattr(template, "uuid", None):
        c["cluster_template_id"] = template.uuid
    ev = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "id": event_id or new_event_id(),
        "operation": operation,
        "context": request_context(context),
        "cluster": c,
        "cluster_template": serialize(template, TEMPLATE_EXCLUDED) if template else {},
        "nodegroups": [serialize(ng, NODEGROUP_EXCLUDED) for ng in groups],
        "magnum": {
            "version": magnum_version(),
            "driver": DRIVER_NAME,
            "conductor_host": conductor_host or socket.gethostname(),
        },
    }
    if nodegroup is not None:
        ev["nodegroup"] = nodegroup.name
    if params:
        ev["params"] = {k: v for k, v in params.items() if v is not None}
    if resolved:
        ev["resolved"] = resolved
    if secrets:
        ev["secrets"] = secrets
    return ev


def request_context(context):
    """The requesting user's project, user and Keystone URL; never the token."""
    out = {}
    for key in ("project_id", "user_id", "auth_url"):
        value = getattr(context, key, None)
        if value:
            out[key] = value
    return out
