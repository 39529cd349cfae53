"""Copy the service's status document into Magnum's cluster and node group records.

Event rule: statuses and their reasons are taken only from an answer about the event sent
for the operation in flight (the answer's ``event_id`` is the one the driver recorded on
the cluster before it looked anything up, see event.record_event). Two consecutive
``UPDATE_*`` operations look alike otherwise: an answer about the previous one, read
between Magnum's UPDATE_IN_PROGRESS and the new event reaching the service, would end the
new one at once. Before the driver records the new event, the recorded one is marked done
(event.mark_done, saved with its final status), and no answer belongs to the operation.

Family rule: a record in ``X_IN_PROGRESS`` takes only a status of the same action X from
the service (``X_IN_PROGRESS``, ``X_COMPLETE``, ``X_FAILED``). Anything else (a stale
answer about the previous operation, or a record that is not in an operation) leaves the
status and its reason alone.
"""

from oslo_log import log as logging

from magnum import objects

LOG = logging.getLogger(__name__)

HEALTH_VALUES = ("HEALTHY", "UNHEALTHY")


def _action(status):
    if not status or "_" not in status:
        return None
    return status.split("_", 1)[0]


def in_progress(status):
    return bool(status) and status.endswith("_IN_PROGRESS")


def family_status(current, reported):
    """The status to record, or None to keep ``current``."""
    if not in_progress(current) or not reported or reported == current:
        return None
    if _action(reported) != _action(current):
        return None
    return reported


# NOT_SENT is the event of an operation whose event the driver has not recorded yet: no
# answer is about it.
NOT_SENT = object()


def belongs(doc, event_id):
    """Whether a status document is about ``event_id``, the operation in flight (None:
    nothing recorded, the family rule alone decides)."""
    return event_id is None or doc.get("event_id") == event_id


def health(doc):
    """(health_status, health_status_reason) from a status document, or (None, None).

    UNKNOWN is never written: Magnum keeps its last known health instead.
    """
    status = doc.get("health_status")
    if status not in HEALTH_VALUES:
        return None, None
    reason = doc.get("health_status_reason") or {}
    if not isinstance(reason, dict):
        reason = {"reason": str(reason)}
    return status, {str(k): "" if v is None else str(v) for k, v in reason.items()}


def apply_nodegroups(cluster, doc, groups, counts_only=False):
    """Update node group records from the document; destroy those reported gone.

    Returns the names of destroyed groups. ``counts_only`` (the health job, or an answer
    about another event than the operation's) touches only the node counts of groups that
    are not in an operation.
    """
    reported = {}
    for item in doc.get("nodegroups") or []:
        if isinstance(item, dict) and item.get("name"):
            reported[item["name"]] = item
    destroyed = []
    for ng in groups:
        item = reported.get(ng.name)
        if item is None:
            continue
        if (not counts_only and item.get("gone") and not ng.is_default
                and _action(ng.status) == "DELETE"):
            LOG.info("magnum-gitops: node group %(n)s of cluster %(c)s is gone; removing "
                     "its record", {"n": ng.name, "c": cluster.uuid})
            ng.destroy()
            destroyed.append(ng.name)
            continue
        if not counts_only:
            new = family_status(ng.status, item.get("status"))
            if new:
                ng.status = new
                ng.status_reason = item.get("status_reason") or None
        # Counts follow the service (the autoscaler) only outside an operation, so a
        # pending request is never overwritten.
        count = item.get("node_count")
        if (isinstance(count, int) and not isinstance(count, bool) and count >= 0
                and ng.status and ng.status.endswith("_COMPLETE")
                and ng.node_count != count):
            ng.node_count = count
        if ng.obj_what_changed():
            ng.save()
    return destroyed


def apply(cluster, doc, groups, event_id=None):
    """Apply a status document to a cluster in an operation. Saves what changed.

    ``event_id`` is the operation's recorded event: an answer about another event changes
    no status (api_address, coe_version, health and the counts of groups at rest still
    follow). Returns the new cluster status when it changed, else None.
    """
    changed_status = None
    ours = belongs(doc, event_id)
    if not ours:
        LOG.debug("magnum-gitops: status of cluster %(c)s is about event %(a)s, the "
                  "operation in flight sent %(e)s: statuses kept",
                  {"c": cluster.uuid, "a": doc.get("event_id"), "e": event_id})
    new = family_status(cluster.status, doc.get("status")) if ours else None
    apply_nodegroups(cluster, doc, groups, counts_only=not ours)
    if new:
        LOG.info("magnum-gitops: cluster %(c)s %(old)s -> %(new)s",
                 {"c": cluster.uuid, "old": cluster.status, "new": new})
        cluster.status = new
        cluster.status_reason = doc.get("status_reason") or None
        changed_status = new
    elif (ours and in_progress(cluster.status) and doc.get("status") == cluster.status):
        reason = doc.get("status_reason") or None
        if reason != cluster.status_reason:
            cluster.status_reason = reason
    api_address = doc.get("api_address")
    if api_address and api_address != cluster.api_address:
        cluster.api_address = api_address
    coe_version = doc.get("coe_version")
    if coe_version and coe_version != cluster.coe_version:
        cluster.coe_version = coe_version
    h, reason = health(doc)
    if h and (h != cluster.health_status or reason != cluster.health_status_reason):
        cluster.health_status = h
        cluster.health_status_reason = reason
    return changed_status


def list_groups(context, cluster):
    return list(objects.NodeGroup.list(context, cluster.uuid))
