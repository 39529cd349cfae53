"""Health monitor for Magnum's sync_cluster_health_status periodic job."""

from oslo_log import log as logging

from magnum.conductor import monitors

from magnum_gitops_driver import status as status_mod

LOG = logging.getLogger(__name__)


class Monitor(monitors.MonitorBase):
    """Reads GET /v1/clusters/{uuid}/status; Magnum stores data["health_status"] (and the
    reason) when set. An unknown cluster, an unreachable service or an UNKNOWN health
    leave ``data`` empty, so Magnum keeps the last known health.

    Outside an operation it also lets node group counts follow the service (the cluster
    autoscaler changes the MachineDeployments' replicas).
    """

    def __init__(self, context, cluster, client):
        super(Monitor, self).__init__(context, cluster)
        self.client = client
        self.data = {}

    @property
    def metrics_spec(self):
        return {}

    def pull_data(self):
        return None

    def poll_health_status(self):
        self.data = {}
        try:
            doc = self.client.get_status(self.cluster.uuid)
        except Exception as e:  # noqa: BLE001 - keep the last known health
            LOG.warning("magnum-gitops: health of cluster %(c)s not read: %(e)s",
                        {"c": self.cluster.uuid, "e": e})
            return
        if doc is None:
            LOG.debug("magnum-gitops: cluster %s unknown to the service", self.cluster.uuid)
            return
        h, reason = status_mod.health(doc)
        if h:
            self.data["health_status"] = h
            self.data["health_status_reason"] = reason
        if self.cluster.status and self.cluster.status.endswith("_COMPLETE"):
            try:
                groups = status_mod.list_groups(self.context, self.cluster)
                status_mod.apply_nodegroups(self.cluster, doc, groups, counts_only=True)
            except Exception as e:  # noqa: BLE001
                LOG.warning("magnum-gitops: node counts of cluster %(c)s not updated: %(e)s",
                            {"c": self.cluster.uuid, "e": e})
