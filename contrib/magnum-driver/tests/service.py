"""The real `magnum-gitops serve` binary on loopback, with a bare Git repository as its
remote, SOPS (age) encryption, a bearer token, and a YAML file of management-cluster
objects (`--objects`) standing in for Cluster API and Flux.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

import yaml

BIN_ENV = "MAGNUM_GITOPS_BIN"
TIMESTAMP = "2026-01-01T00:00:00Z"


def binary():
    """The serve binary from MAGNUM_GITOPS_BIN; None when unset (skip), error in CI."""
    path = os.environ.get(BIN_ENV)
    if not path:
        if os.environ.get("CI", "").lower() == "true":
            raise RuntimeError(
                "%s is not set: the integration tests need the magnum-gitops binary (build "
                "it with `go build -o /tmp/mg/magnum-gitops ./cmd/magnum-gitops` and export "
                "%s=/tmp/mg/magnum-gitops)" % (BIN_ENV, BIN_ENV))
        return None
    if not os.access(path, os.X_OK):
        raise RuntimeError("%s=%s is not an executable file" % (BIN_ENV, path))
    return path


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def run(*args, **kw):
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw).stdout


class Service(object):
    """One serve process and its repository; stop() and start() keep both."""

    def __init__(self, binary_path, token="integration-token-DO-NOT-LOG", tls=None):
        self.binary = binary_path
        self.dir = tempfile.mkdtemp(prefix="magnum-gitops-serve-")
        self.repo = os.path.join(self.dir, "clusters.git")
        run("git", "init", "-q", "--bare", "-b", "main", self.repo)
        self.token = token
        self.token_file = self._write("token", token + "\n")
        run("age-keygen", "-o", os.path.join(self.dir, "age.key"))
        with open(os.path.join(self.dir, "age.key")) as f:
            self.age_recipient = next(line.split()[-1] for line in f
                                      if line.startswith("# public key:"))
        self.digest_key_file = self._write("digest.key", os.urandom(32).hex() + "\n")
        self.objects_file = os.path.join(self.dir, "objects.yaml")
        self.set_objects([])
        self.port = free_port()
        self.url = "%s://127.0.0.1:%d" % ("https" if tls else "http", self.port)
        self.tls = tls
        serve = {"listen": "127.0.0.1:%d" % self.port, "token_files": [self.token_file]}
        if tls:
            # Mutual TLS: a client certificate signed by client_ca_file stands for a token;
            # /healthz moves to a plain-HTTP ops port.
            self.ops_port = free_port()
            serve["ops_listen"] = "127.0.0.1:%d" % self.ops_port
            serve["tls"] = {"cert_file": tls["server_cert"], "key_file": tls["server_key"],
                            "client_ca_file": tls["ca_file"]}
        self.health_url = ("http://127.0.0.1:%d/healthz" % self.ops_port if tls
                           else self.url + "/healthz")
        self.config_file = self._write("config.yaml", yaml.safe_dump({
            "git": {"url": "file://" + self.repo,
                    "author": {"name": "magnum-gitops", "email": "magnum-gitops@example.org"}},
            "sops": {"age_recipients": [self.age_recipient],
                     "digest_key_file": self.digest_key_file},
            "serve": serve,
        }))
        self.log_file = os.path.join(self.dir, "serve.log")
        self.proc = None

    def _write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, 0o600)
        return path

    # -- process ---------------------------------------------------------------------------

    def start(self, timeout=30):
        log = open(self.log_file, "a")
        self.proc = subprocess.Popen(
            [self.binary, "serve", "--config", self.config_file, "--objects",
             self.objects_file, "--log-format", "json", "--resync-interval", "0"],
            stdout=log, stderr=log, start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("magnum-gitops serve exited %s:\n%s"
                                   % (self.proc.returncode, self.logs()))
            try:
                with urllib.request.urlopen(self.health_url, timeout=1) as r:
                    if r.status == 200:
                        return self
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("magnum-gitops serve did not answer /healthz:\n" + self.logs())

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            self.proc = None
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=15)
        self.proc = None

    def close(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def logs(self):
        try:
            with open(self.log_file) as f:
                return f.read()
        except OSError:
            return ""

    def log_events(self):
        out = []
        for line in self.logs().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
        return out

    # -- Git ---------------------------------------------------------------------------------

    def git(self, *args):
        return run("git", "--git-dir", self.repo, *args)

    def head(self):
        try:
            return self.git("rev-parse", "main").strip()
        except subprocess.CalledProcessError:
            return None

    def commits(self):
        """Oldest first: {sha, subject, trailers{}}."""
        if self.head() is None:
            return []
        fmt = "%H%x1f%s%x1f%(trailers:only,unfold)%x1e"
        out = []
        for rec in self.git("log", "--reverse", "--format=" + fmt, "main").split("\x1e"):
            # Not strip(): it takes \x1f for whitespace, and a commit without trailers
            # ends with one.
            rec = rec.strip("\n")
            if not rec:
                continue
            sha, subject, trailers = rec.split("\x1f", 2)
            t = {}
            for line in trailers.splitlines():
                if ": " in line:
                    k, v = line.split(": ", 1)
                    t[k] = v
            out.append({"sha": sha, "subject": subject, "trailers": t})
        return out

    def show(self, path, rev="main"):
        return self.git("show", "%s:%s" % (rev, path))

    def files(self, rev="main"):
        return self.git("ls-tree", "-r", "--name-only", rev).split()

    # -- management cluster ------------------------------------------------------------

    def set_objects(self, objs):
        tmp = self.objects_file + ".tmp"
        with open(tmp, "w") as f:
            yaml.safe_dump_all(objs, f)
        os.replace(tmp, self.objects_file)

    def status(self, uuid):
        """The service's status answer (plain-HTTP services only), for failure messages."""
        req = urllib.request.Request(self.url + "/v1/clusters/%s/status" % uuid,
                                     headers={"Authorization": "Bearer " + self.token})
        try:
            with urllib.request.urlopen(req, timeout=5) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise


# -- Cluster API and Flux objects ---------------------------------------------------------


def _cond(type_, status="True", **kw):
    c = {"type": type_, "status": status, "lastTransitionTime": TIMESTAMP}
    c.update(kw)
    return c


def _meta(name, namespace, stack_id, **labels):
    all_labels = {"capi.stackhpc.com/cluster": stack_id}
    all_labels.update(labels)
    return {"name": name, "namespace": namespace, "creationTimestamp": TIMESTAMP,
            "labels": all_labels}


def kustomization(applied_revision):
    """Flux's Kustomization that applies the repository, having applied a revision."""
    return {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
            "metadata": {"name": "magnum-clusters", "namespace": "flux-system",
                         "creationTimestamp": TIMESTAMP},
            "status": {"lastAppliedRevision": "main@sha1:%s" % applied_revision,
                       "conditions": [_cond("Ready")]}}


def cluster_objects(stack_id, namespace, uuid, project_id, masters, workers, version,
                    host="203.0.113.10", ready=True):
    """What CAPI and Flux hold for a running cluster: workers is {group name: replicas}."""
    hr = {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
          "metadata": {"name": stack_id, "namespace": namespace, "generation": 1,
                       "creationTimestamp": TIMESTAMP,
                       "labels": {"app.kubernetes.io/managed-by": "magnum-gitops",
                                  "cluster.x-k8s.io/cluster-name": stack_id,
                                  "magnum.openstack.org/cluster-uuid": uuid,
                                  "magnum.openstack.org/project-id": project_id}},
          "spec": {"releaseName": stack_id},
          "status": {"observedGeneration": 1, "conditions": [
              _cond("Ready", reason="UpgradeSucceeded", message="Helm upgrade succeeded")]}}
    status = "True" if ready else "False"
    cluster = {"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
               "metadata": _meta(stack_id, namespace, stack_id),
               "spec": {"controlPlaneEndpoint": {"host": host, "port": 6443}},
               "status": {"phase": "Provisioned", "infrastructureReady": ready,
                          "controlPlaneReady": ready,
                          "conditions": [_cond("Ready", status),
                                         _cond("ControlPlaneReady", status),
                                         _cond("InfrastructureReady", status)]}}
    kcp_conditions = [_cond(t) for t in ("Ready", "MachinesReady", "EtcdClusterHealthy",
                                         "ControlPlaneComponentsHealthy", "Available",
                                         "CertificatesAvailable")]
    kcp = {"apiVersion": "controlplane.cluster.x-k8s.io/v1beta1",
           "kind": "KubeadmControlPlane",
           "metadata": _meta(stack_id + "-control-plane", namespace, stack_id),
           "spec": {"replicas": masters, "version": version},
           "status": {"replicas": masters, "updatedReplicas": masters,
                      "readyReplicas": masters, "version": version, "ready": True,
                      "initialized": True, "conditions": kcp_conditions}}
    infra = {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
             "kind": "OpenStackCluster", "metadata": _meta(stack_id, namespace, stack_id),
             "status": {"ready": True, "conditions": [_cond("Ready")]}}
    objs = [hr, cluster, kcp, infra]
    for name, replicas in workers.items():
        objs.append({
            "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineDeployment",
            "metadata": _meta("%s-%s" % (stack_id, name), namespace, stack_id,
                              **{"capi.stackhpc.com/node-group": name,
                                 "capi.stackhpc.com/component": "worker"}),
            "spec": {"clusterName": stack_id, "replicas": replicas},
            "status": {"replicas": replicas, "updatedReplicas": replicas,
                       "readyReplicas": replicas, "phase": "Running",
                       "conditions": [_cond("Ready"), _cond("Available")]}})
    return objs
