"""FluxCAPIStandIn: a stand-in for Flux and Cluster API, which do not run in this suite.

It plays both from what Git holds: about once a second it reads the remote's branch and
rewrites serve's `--objects` file as if Flux had applied that commit (the Kustomization's
lastAppliedRevision) and Cluster API had made every cluster it describes ready at once
(one HelmRelease, Cluster, KubeadmControlPlane, OpenStackCluster and a MachineDeployment
per node group, with the replica counts and Kubernetes version of the HelmRelease's
values). A HelmRelease gone from Git means the cluster is gone. The objects come from the
driver shim's test helpers (contrib/magnum-driver/tests/service.py: kustomization,
cluster_objects), the same shapes its integration tests use.

hold() stops it at the revision it applied last (Flux has not applied the new commit yet),
so a test can look at what Magnum says in between. It records when it first applied each
revision, for the figures.
"""

import contextlib
import os
import threading
import time

import yaml

from shimtests import service as shim_objects

FLUX_PATH = "clusters/magnum/"


class FluxCAPIStandIn(object):

    def __init__(self, git, objects_file, interval=1.0):
        self.git = git
        self.objects_file = objects_file
        self.interval = interval
        self.applied = None       # the revision the objects file describes
        self.applied_at = {}      # revision -> time.time() it was first applied
        self.errors = []
        self._held = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._write([])
        self.thread = threading.Thread(target=self._loop, name="flux-capi-stand-in",
                                       daemon=True)
        self.thread.start()

    def api_address(self, stack_id):
        """The control plane endpoint every Cluster of this stand-in has
        (contrib/magnum-driver/tests/service.py: cluster_objects)."""
        return "https://203.0.113.10:6443"

    def capi_done(self, operation, stack_id, since, workers=None):
        """The stand-in's Cluster API is done when it applies: no moment of its own."""
        return None

    def stop(self):
        self._stop.set()
        self.thread.join(timeout=10)

    @contextlib.contextmanager
    def hold(self):
        """Flux applies nothing new while held (the objects stay at the last revision)."""
        with self._lock:  # an apply in progress finishes first
            self._held.set()
        try:
            yield
        finally:
            self._held.clear()
            self.sync()

    def sync(self):
        """Apply the branch's head now, unless held; returns the applied revision."""
        with self._lock:
            if self._held.is_set():
                return self.applied
            head = self.git.head()
            if head is None or head == self.applied:
                return self.applied
            objs = [shim_objects.kustomization(head)]
            for path in self.git.files(head):
                if path.startswith(FLUX_PATH) and path.endswith("/helmrelease.yaml"):
                    objs += self._cluster(yaml.safe_load(self.git.show(path, head)))
            self._write(objs)
            self.applied = head
            self.applied_at.setdefault(head, time.time())
            return head

    def _loop(self):
        while not self._stop.wait(self.interval):
            try:
                self.sync()
            except Exception as e:  # noqa: BLE001 - kept for the test to report
                self.errors.append(repr(e))

    @staticmethod
    def _cluster(hr):
        meta, values = hr["metadata"], hr["spec"]["values"]
        labels = meta.get("labels") or {}
        version = str(values.get("kubernetesVersion", ""))
        if not version.startswith("v"):
            version = "v" + version
        workers = {g["name"]: int(g.get("machineCount") or 0)
                   for g in values.get("nodeGroups") or []}
        return shim_objects.cluster_objects(
            meta["name"], meta["namespace"], labels["magnum.openstack.org/cluster-uuid"],
            labels["magnum.openstack.org/project-id"],
            int((values.get("controlPlane") or {}).get("machineCount") or 1), workers, version)

    def _write(self, objs):
        tmp = self.objects_file + ".tmp"
        with open(tmp, "w") as f:
            yaml.safe_dump_all(objs, f)
        os.replace(tmp, self.objects_file)
