"""The Magnum cluster driver: every cluster change becomes a ClusterEvent POSTed to the
magnum-gitops service, and the service's status document flows back into Magnum.

Works with Magnum 15 (Zed, Debian bookworm's python3-magnum) up to master: every hook of
both base classes is defined here (rotate_credential and validate_master_size/resize are
absent in Zed and simply never called there).
"""

from oslo_log import log as logging

from magnum.common import clients
from magnum.common import exception
from magnum.conductor.handlers.common import cert_manager
import magnum.conf
from magnum.drivers.common import driver
from magnum import objects
from magnum.objects import fields

from magnum_gitops_driver import client as client_mod
from magnum_gitops_driver import conf as gitops_conf
from magnum_gitops_driver import event as event_mod
from magnum_gitops_driver import monitor as monitor_mod
from magnum_gitops_driver import resolve as resolve_mod
from magnum_gitops_driver import secrets as secrets_mod
from magnum_gitops_driver import status as status_mod

CONF = magnum.conf.CONF
LOG = logging.getLogger(__name__)

S = fields.ClusterStatus


class _TemplateDefinition(object):
    """What Zed's `magnum-driver-manage list-drivers` reads from every driver."""

    template_path = "n/a (magnum-gitops: no Heat template)"


def _master_size_error(node_count):
    cls = getattr(exception, "MasterNGSizeInvalid", None)
    if cls is not None:
        return cls(requested_size=node_count)
    return exception.InvalidParameterValue(
        message="master nodegroup size of %d is invalid, size cannot be an even number "
        "or less than 1." % node_count)


class Driver(driver.Driver):
    """Entry point ``k8s_gitops_v1`` in the ``magnum.drivers`` group."""

    beta = False
    # Keystone refuses trusts made with an application credential (CVE-2026-43000), and
    # nothing here uses one: the cluster authenticates with its own application
    # credential, and every status pass runs with Magnum's admin context. Magnum releases
    # that read this create no trust for the driver's clusters (peer drivers declare it too).
    needs_trust = False

    def __init__(self):
        # get_drivers() instantiates every driver in magnum-api and magnum-conductor just
        # to read `provides`: no I/O here, the HTTP client is built on first use.
        self._client = None

    @property
    def provides(self):
        return gitops_conf.parse_provides(CONF.gitops.provides)

    @property
    def client(self):
        if self._client is None:
            self._client = client_mod.Client(CONF.gitops)
        return self._client

    def get_template_definition(self):
        return _TemplateDefinition()

    # -- API-side validation (Magnum >= 20 calls these; Zed never does) ----------------

    def validate_master_size(self, node_count):
        if node_count is None or node_count < 1 or node_count % 2 == 0:
            raise _master_size_error(node_count)

    def validate_master_resize(self, node_count):
        # Cluster API's KubeadmControlPlane scales the control plane; keep etcd's quorum.
        self.validate_master_size(node_count)

    # -- helpers ------------------------------------------------------------------------

    def _send(self, operation, context, cluster, template=None, groups=None, nodegroup=None,
              params=None, secrets=None, osc=None, pending=()):
        """POST the operation's event; ``pending`` are node groups to save with it first."""
        event_id = event_mod.new_event_id()
        try:
            self._record_pending(cluster, event_id, pending)
            if template is None:
                template = cluster.cluster_template
            if groups is None:
                groups = event_mod.nodegroups_with(cluster, nodegroup)
            resolved = None
            if CONF.gitops.resolve_in_conductor:
                osc = osc or clients.OpenStackClients(context)
                resolved = resolve_mod.resolve(context, osc, cluster, template, groups,
                                               interface=CONF.gitops.app_cred_interface,
                                               upgrade=operation == "upgrade_cluster")
            ev = event_mod.build(operation, context, cluster, template, groups,
                                 nodegroup=nodegroup, params=params, resolved=resolved,
                                 secrets=secrets, event_id=event_id, conductor_host=CONF.host)
            if not ev["context"].get("auth_url") and resolved and resolved.get(
                    "keystone_public_url"):
                ev["context"]["auth_url"] = resolved["keystone_public_url"]
            client = self.client
        except Exception as e:
            e.gitops_not_sent = True
            raise
        LOG.info("magnum-gitops: sending %(op)s of cluster %(c)s as event %(id)s",
                 {"op": operation, "c": cluster.uuid, "id": ev["id"]})
        answer = client.post_event(ev, request_id=getattr(context, "request_id", None))
        stack_id = answer.get("stack_id")
        if stack_id and stack_id != cluster.stack_id:
            LOG.info("magnum-gitops: cluster %(c)s stack_id %(s)s",
                     {"c": cluster.uuid, "s": stack_id})
            cluster.stack_id = stack_id
            cluster.save()
        return answer

    @staticmethod
    def _record_pending(cluster, event_id, groups=()):
        """Save, before any look-up, that the operation's event is on its way.

        The conductor may have saved the cluster *_IN_PROGRESS already (node group
        operations do); the look-ups take seconds against a real cloud, and a status pass
        of any conductor in that window reads the service's answer about the previous
        event. With the new event id recorded (and the target group's in-progress status
        saved) that answer ends nothing (status.apply).
        """
        if event_mod.record_event(cluster, event_id):
            cluster.save()
        for ng in groups:
            if ng.obj_what_changed():
                ng.save()

    @staticmethod
    def _drop_unused_app_cred(e, osc, context, cluster, app_cred):
        """Delete a credential made for an event the service surely did not keep.

        A refusal (4xx), an event never sent, or only refused connections prove that. After
        a timeout or a 5xx the service may have committed the event, and the cluster then
        needs the credential (CAPO deletes the servers with it): it stays, and
        _cleanup_deleted removes it once the cluster's delete is complete.
        """
        if (getattr(e, "gitops_refused", False) or getattr(e, "gitops_not_sent", False)
                or getattr(e, "gitops_maybe_received", True) is False):
            secrets_mod.delete_app_cred(osc, context, cluster, app_cred["id"])
        else:
            LOG.warning("magnum-gitops: application credential %(id)s of cluster %(c)s "
                        "kept: the service may have received the event",
                        {"id": app_cred["id"], "c": cluster.uuid})

    @staticmethod
    def _mark(groups, status):
        for ng in groups:
            ng.status = status
            ng.status_reason = None

    @staticmethod
    def _save(groups, skip=None):
        for ng in groups:
            if ng is skip:
                continue
            if ng.obj_what_changed():
                ng.save()

    # -- cluster operations --------------------------------------------------------------

    def create_cluster(self, context, cluster, cluster_create_timeout):
        osc = clients.OpenStackClients(context)
        certificates = secrets_mod.certificates(context, cluster)
        app_cred = secrets_mod.create_app_cred(osc, context, cluster)
        material = {
            "application_credential": {"id": app_cred["id"], "secret": app_cred["secret"]},
            "certificates": certificates,
        }
        bundle = secrets_mod.ca_bundle()
        if bundle:
            material["ca_bundle"] = bundle
        try:
            self._send("create_cluster", context, cluster,
                       params={"create_timeout": cluster_create_timeout},
                       secrets=material, osc=osc)
        except Exception as e:
            self._drop_unused_app_cred(e, osc, context, cluster, app_cred)
            raise

    def update_cluster(self, context, cluster, scale_manager=None, rollback=False):
        groups = event_mod.nodegroups_with(cluster)
        worker = next((ng for ng in groups if ng.is_default and ng.role != "master"), None)
        if worker is not None:
            self._mark([worker], S.UPDATE_IN_PROGRESS)
        self._send("update_cluster", context, cluster, groups=groups,
                   params={"node_count": worker.node_count if worker else None})
        self._save(groups)

    def resize_cluster(self, context, cluster, resize_manager, node_count,
                       nodes_to_remove, nodegroup=None):
        if nodegroup is None:
            nodegroup = cluster.default_ng_worker
        self._send("resize_cluster", context, cluster, nodegroup=nodegroup,
                   params={"node_count": node_count,
                           "nodes_to_remove": list(nodes_to_remove or []) or None})

    def upgrade_cluster(self, context, cluster, cluster_template, max_batch_size,
                        nodegroup, scale_manager=None, rollback=False):
        # The conductor passes rollback positionally, so it lands in scale_manager; both are
        # meaningless here.
        old_template_id = cluster.cluster_template_id
        groups = event_mod.nodegroups_with(cluster, nodegroup)
        self._mark(groups, S.UPDATE_IN_PROGRESS)
        params = {"max_batch_size": max_batch_size}
        if old_template_id != cluster_template.uuid:
            params["from_template_id"] = old_template_id
        self._send("upgrade_cluster", context, cluster, template=cluster_template,
                   groups=groups, nodegroup=nodegroup, params=params)
        # The conductor never records the new template: without this the upgrade is
        # forgotten at the next render and in `openstack coe cluster show`.
        if cluster.cluster_template_id != cluster_template.uuid:
            cluster.cluster_template_id = cluster_template.uuid
            cluster.cluster_template = cluster_template
            cluster.obj_reset_changes(["cluster_template"])
            cluster.save()
        self._save(groups, skip=nodegroup)

    def delete_cluster(self, context, cluster):
        groups = event_mod.nodegroups_with(cluster)
        # The conductor does not touch node groups on delete.
        self._mark(groups, S.DELETE_IN_PROGRESS)
        self._send("delete_cluster", context, cluster, groups=groups)
        self._save(groups)

    # -- node group operations -----------------------------------------------------------

    def create_nodegroup(self, context, cluster, nodegroup):
        self._send("create_nodegroup", context, cluster, nodegroup=nodegroup)
        if not nodegroup.stack_id and cluster.stack_id:
            nodegroup.stack_id = cluster.stack_id  # saved by the conductor

    def update_nodegroup(self, context, cluster, nodegroup):
        # `nodegroup` is patched but unsaved, UPDATE_IN_PROGRESS in memory only; it is
        # saved before the look-ups (the conductor saves the same object, patched, on
        # success and on failure alike) and substituted into the event.
        self._send("update_nodegroup", context, cluster, nodegroup=nodegroup,
                   pending=[nodegroup])

    def delete_nodegroup(self, context, cluster, nodegroup):
        # The conductor sets DELETE_IN_PROGRESS in memory only and saves nothing after us:
        # saved before the look-ups.
        nodegroup.status_reason = None
        self._send("delete_nodegroup", context, cluster, nodegroup=nodegroup,
                   pending=[nodegroup])

    # -- credentials and certificates ------------------------------------------------------

    def rotate_ca_certificate(self, context, cluster):
        # The conductor has already replaced the four certificate references on `cluster`
        # and saves them on failure; the cluster still trusts the old CA, so put the stored
        # references back (and drop the new, unused certificates) before refusing.
        stored = objects.Cluster.get_by_uuid(context, cluster.uuid)
        orphans = []
        for ref in secrets_mod.CERT_REFS:
            new, old = getattr(cluster, ref), getattr(stored, ref)
            if new and new != old:
                orphans.append(new)
            setattr(cluster, ref, old)
        secrets_mod.delete_cert_refs(context, cluster, orphans)
        raise exception.NotSupported(
            operation="Rotating the CA certificate of a cluster managed by magnum-gitops")

    def rotate_credential(self, context, cluster):
        """Magnum >= 21: a new application credential, sent for the cluster's Secret."""
        osc = clients.OpenStackClients(context)
        app_cred = secrets_mod.create_app_cred(osc, context, cluster)
        material = {"application_credential": {"id": app_cred["id"],
                                                "secret": app_cred["secret"]}}
        bundle = secrets_mod.ca_bundle()
        if bundle:
            material["ca_bundle"] = bundle
        try:
            self._send("rotate_credential", context, cluster, secrets=material, osc=osc)
        except Exception as e:
            self._drop_unused_app_cred(e, osc, context, cluster, app_cred)
            raise
        # The credential conductor leaves the status to the driver.
        cluster.status = S.UPDATE_IN_PROGRESS
        cluster.status_reason = None
        cluster.save()

    # -- status ------------------------------------------------------------------------------

    def update_cluster_status(self, context, cluster, use_admin_ctx=False):
        try:
            doc = self.client.get_status(cluster.uuid)
        except client_mod.Unavailable as e:
            LOG.warning("magnum-gitops: status of cluster %(c)s not read: %(e)s",
                        {"c": cluster.uuid, "e": e})
            return
        except client_mod.IncompatibleService as e:
            # The status stays as it is until a service of the driver's release answers.
            LOG.error("magnum-gitops: status of cluster %(c)s not read: %(e)s",
                      {"c": cluster.uuid, "e": e})
            return
        if doc is None:
            LOG.debug("magnum-gitops: cluster %s unknown to the service", cluster.uuid)
            return
        if doc.get("uuid") not in (None, cluster.uuid):
            LOG.warning("magnum-gitops: status answer for %(u)s ignored (asked for %(c)s)",
                        {"u": doc.get("uuid"), "c": cluster.uuid})
            return
        # The operation's event as every conductor sees it now: the driver may have recorded
        # a new one since this pass read the cluster (before the answer was asked for).
        try:
            stored = objects.Cluster.get_by_uuid(context, cluster.uuid)
        except exception.ClusterNotFound:
            return
        if stored.status != cluster.status:
            LOG.debug("magnum-gitops: cluster %(c)s moved to %(s)s during the status pass",
                      {"c": cluster.uuid, "s": stored.status})
            return
        groups = status_mod.list_groups(context, cluster)
        event_id = event_mod.recorded_event(stored)
        if status_mod.in_progress(stored.status) and event_mod.event_done(stored):
            # Magnum started an operation (it saves the cluster *_IN_PROGRESS before it
            # calls the driver) whose event the driver has not recorded yet: every answer
            # the service has is about an earlier one.
            LOG.debug("magnum-gitops: cluster %(c)s is %(s)s and its last event %(e)s is "
                      "over: the new operation's event is not sent yet",
                      {"c": cluster.uuid, "s": stored.status, "e": event_id})
            event_id = status_mod.NOT_SENT
        new = status_mod.apply(cluster, doc, groups, event_id=event_id)
        if new == S.DELETE_COMPLETE and not self._cleanup_deleted(context, cluster):
            # Magnum's job destroys the record right after a DELETE_COMPLETE: stay in
            # progress until the application credential is gone, the next pass retries.
            cluster.status = S.DELETE_IN_PROGRESS
            cluster.status_reason = ("cluster deleted; deleting its application "
                                     "credential failed, retrying")
        if (new and not status_mod.in_progress(cluster.status)
                and event_mod.recorded_event(cluster) == event_id):
            event_mod.mark_done(cluster)  # saved with the final status
        if cluster.obj_what_changed():
            cluster.save()

    def _cleanup_deleted(self, context, cluster):
        """What a deleted cluster leaves in Keystone and Magnum's certificate store;
        False when the application credentials could not be deleted (nothing else done).

        The driver owns the application credentials it made with the user's token:
        Magnum never deletes them, and serve deletes only those it made itself. Magnum's
        own clean-up deletes only ca_cert_ref and magnum_cert_ref, and only from 18.0.0
        on (for drivers other than Heat's); the etcd and front-proxy CAs are ours.
        """
        try:
            secrets_mod.delete_cluster_app_creds(clients.OpenStackClients(context), cluster)
        except Exception as e:  # noqa: BLE001 - retried at the next status pass
            LOG.warning("magnum-gitops: deleting the application credentials of deleted "
                        "cluster %(c)s failed, retrying: %(t)s",
                        {"c": cluster.uuid, "t": e.__class__.__name__})
            return False
        secrets_mod.delete_cert_refs(
            context, cluster, [cluster.etcd_ca_cert_ref, cluster.front_proxy_ca_cert_ref])
        cluster.etcd_ca_cert_ref = None
        cluster.front_proxy_ca_cert_ref = None
        major = event_mod.magnum_major()
        if major is None:
            major = 18 if hasattr(driver.Driver, "beta") else 15
        if major >= 18:
            return True
        cert_manager.delete_certificates_from_cluster(cluster, context=context)
        # The trust Zed's conductor made before calling the driver (none when Magnum
        # honoured needs_trust); its helper is idempotent and never raises.
        if not (getattr(cluster, "trust_id", None)
                or getattr(cluster, "trustee_user_id", None)):
            return True
        try:
            from magnum.conductor.handlers.common import trust_manager
        except ImportError:  # Magnum without trusts
            return True
        osc = clients.OpenStackClients(context)
        trust_manager.delete_trustee_and_trust(osc, context, cluster)
        return True

    def get_monitor(self, context, cluster):
        return monitor_mod.Monitor(context, cluster, self.client)

    # -- federations (not supported by Magnum drivers in practice) -----------------------

    def create_federation(self, context, federation):
        raise NotImplementedError("magnum-gitops does not support federations")

    def update_federation(self, context, federation):
        raise NotImplementedError("magnum-gitops does not support federations")

    def delete_federation(self, context, federation):
        raise NotImplementedError("magnum-gitops does not support federations")
