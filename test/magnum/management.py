"""ManagementCluster: real Flux and the real Cluster API controllers for the stack
(E2E_MAGNUM_CAPI=1), in place of fluxcapi.FluxCAPIStandIn, with the same interface.

test/e2e's TestMagnumManagementCluster runs them (E2E_TEST_BIN, built by hack/e2e-magnum.sh):
kube-apiserver and etcd, source-, kustomize- and helm-controller, Cluster API v1.14.2's
core, kubeadm bootstrap and control plane, and CAPD with its in-memory backend, and the
chart server. Flux reads the stack's own Git remote and decrypts with the stack's age
identity; serve reads the real objects through the kubeconfig it writes. The only part
played is azimuth's addon provider (see playAddonProvider in test/e2e/capi_test.go).

hold() suspends the Kustomization, as an operator pauses Flux; applied_at records when the
Kustomization first reported each revision applied, and capi_done when Cluster API was done
with an operation, for the figures.
"""

import contextlib
import json
import os
import subprocess
import threading
import time

import yaml

from procs import wait_for

KUSTOMIZATION = ("flux-system", "magnum-clusters")  # deploy/flux
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


class ManagementCluster(object):

    def __init__(self, stack, git, git_password_file, age_key, interval=0.5):
        self.git = git
        self.interval = interval
        self.applied = None
        self.applied_at = {}
        self.errors = []
        self.capi = []  # (time, _read_capi()) at each change
        self._lock = threading.Lock()
        self._stop = threading.Event()
        d = os.path.join(stack.dir, "management")
        os.makedirs(d, exist_ok=True)
        test_bin = os.environ.get("E2E_TEST_BIN")
        if not test_bin or not os.access(test_bin, os.X_OK):
            raise RuntimeError("E2E_MAGNUM_CAPI=1 needs E2E_TEST_BIN, the test/e2e binary "
                               "(hack/e2e-magnum.sh builds it)")
        env = dict(os.environ, E2E_MANAGEMENT_DIR=d, E2E_MANAGEMENT_GIT_URL=git.url,
                   E2E_MANAGEMENT_GIT_DIR=git.repo,
                   E2E_MANAGEMENT_GIT_PASSWORD_FILE=git_password_file,
                   E2E_MANAGEMENT_AGE_KEY_FILE=age_key,
                   # serve and this stack reach it on loopback: no private network.
                   E2E_NETNS="0")
        self.proc = stack.spawn("management-cluster", [
            test_bin, "-test.run", "^TestMagnumManagementCluster$", "-test.v",
            "-test.timeout", "4h"], env=env, cwd=os.path.join(REPO, "test", "e2e"),
            term_timeout=60)
        ready = os.path.join(d, "ready.json")
        wait_for("the management cluster", lambda: os.path.exists(ready), 600, self.proc, 0.5)
        with open(ready) as f:
            r = json.load(f)
        self.kubeconfig = r["kubeconfig"]
        with open(r["config"]) as f:
            self.config = yaml.safe_load(f)
        self.thread = threading.Thread(target=self._loop, name="management-applied",
                                       daemon=True)
        self.thread.start()

    def serve_config(self, config):
        """config with what serve needs for this management cluster: the chart server,
        the site post-renderers to the in-memory backend, the Kustomization to read and to
        nudge after a push, the CAPO versions the CRDs serve, the leader election Lease."""
        for key in ("magnum", "flux", "management_cluster"):
            config[key] = self.config[key]
        for key in ("kustomization", "reconcile_request", "leader_election"):
            config["serve"][key] = self.config["serve"][key]
        return config

    def kubectl(self, *args):
        p = subprocess.run(["kubectl", "--kubeconfig", self.kubeconfig] + list(args),
                           capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            raise RuntimeError("kubectl %s: %s" % (" ".join(args), p.stderr.strip()))
        return p.stdout

    def _suspend(self, suspend):
        ns, name = KUSTOMIZATION
        self.kubectl("-n", ns, "patch", "kustomizations.kustomize.toolkit.fluxcd.io", name,
                     "--type", "merge", "-p", json.dumps({"spec": {"suspend": suspend}}))

    @contextlib.contextmanager
    def hold(self):
        """Flux applies nothing new while held: the Kustomization is suspended, once the
        branch's head is applied (a reconcile under way when the suspend lands would fetch
        and apply the very commit the test holds back)."""
        head = self.git.head()
        wait_for("Flux to apply %s before holding" % head, lambda: self.applied == head, 180,
                 self.proc, 0.2)
        self._suspend(True)
        try:
            yield
        finally:
            self._suspend(False)

    def api_address(self, stack_id):
        """The control plane endpoint of the Cluster API Cluster of a Magnum cluster."""
        items = json.loads(self.kubectl("get", "clusters.cluster.x-k8s.io", "-A",
                                        "-o", "json"))["items"]
        for c in items:
            if c["metadata"]["name"] == stack_id:
                ep = c["spec"].get("controlPlaneEndpoint") or {}
                return "https://%s:%d" % (ep["host"], ep["port"])
        raise AssertionError("no Cluster API Cluster named %s" % stack_id)

    def capi_done(self, operation, stack_id, since, workers=None):
        """When Cluster API was first seen done with an operation, at or after since: the
        Cluster Available (create), the default-worker MachineDeployment settled at
        `workers` replicas (resize), the Cluster gone (delete); None if not seen."""
        def done(state):
            cl = state.get(stack_id)
            if operation == "delete":
                return cl is None
            if cl is None or not cl["available"]:
                return False
            if operation == "resize":
                md = cl["machinedeployments"].get(stack_id + "-default-worker")
                return md is not None and set(md) == {workers}
            return True
        with self._lock:
            seen = list(self.capi)
        for at, state in seen:
            if at >= since and done(state):
                return at
        return None

    def stop(self):
        self._stop.set()
        self.thread.join(timeout=10)

    def _read_capi(self):
        """{Cluster name: {available, machinedeployments: {name: (spec, ready, available,
        up to date replicas)}}} as the API server has them now."""
        items = json.loads(self.kubectl(
            "get", "clusters.cluster.x-k8s.io,machinedeployments.cluster.x-k8s.io", "-A",
            "-o", "json"))["items"]
        out = {}
        for o in items:
            if o["kind"] == "Cluster":
                conds = {c["type"]: c["status"] for c in o.get("status", {}).get("conditions", [])}
                out.setdefault(o["metadata"]["name"], {"machinedeployments": {}})[
                    "available"] = conds.get("Available") == "True"
        for o in items:
            if o["kind"] == "MachineDeployment":
                owner = o["metadata"].get("labels", {}).get("cluster.x-k8s.io/cluster-name")
                st = o.get("status", {})
                out.setdefault(owner, {"available": False, "machinedeployments": {}})[
                    "machinedeployments"][o["metadata"]["name"]] = (
                    o["spec"].get("replicas"), st.get("readyReplicas"),
                    st.get("availableReplicas"), st.get("upToDateReplicas"))
        return out

    def _loop(self):
        ns, name = KUSTOMIZATION
        while not self._stop.wait(self.interval):
            try:
                rev = self.kubectl("-n", ns, "get", "kustomizations.kustomize.toolkit.fluxcd.io",
                                   name, "-o", "jsonpath={.status.lastAppliedRevision}")
                now = time.time()
                state = self._read_capi()
            except Exception as e:  # noqa: BLE001 - kept for the test to report
                self.errors.append(repr(e))
                continue
            sha = rev.rpartition(":")[2].strip()  # main@sha1:<sha>
            if sha and sha != self.applied:
                self.applied = sha
                self.applied_at.setdefault(sha, now)
            with self._lock:
                if not self.capi or self.capi[-1][1] != state:
                    self.capi.append((now, state))
