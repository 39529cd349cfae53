"""Magnum's own conformance tests: magnum-tempest-plugin's test_cluster (Debian's tempest
33 and magnum-tempest-plugin 1.7.0), the cluster tests the upstream drivers' CI runs,
against this stack (the driver shim, serve, the Flux/CAPI stand-in).

tempest runs once (module fixture); each of its tests is one pytest case that checks the
recorded outcome, so the run's summary names each. The configuration follows
../shared/docs/openstack-offline.md and minds its three traps: pre-provisioned credentials
(dynamic ones are deleted by the first test's tearDown), the keypair deleted before each
run (setUpClass creates it only when its delete fails), and a Nova stand-in that answers
keypair create/delete as tempest's schema wants, closing each connection.

One outcome is a failure this suite expects and explains rather than hides:
test_create_cluster_with_zero_nodes is refused by Magnum's API itself (400 "Resizing a
nodegroup to zero is not supported in the provided microversion"): the plugin sends no
OpenStack-API-Version header, so Magnum takes microversion 1.1, and node_count 0 needs
1.10. test_zero_nodes_through_the_cli shows the driver takes such a cluster when the
client asks for 1.10, as the openstack CLI does. Should the plugin's test ever pass (or
fail otherwise), its case here fails, and this explanation must be revisited.
"""

import io
import os
import re
import subprocess
import time

import pytest
import subunit
import testtools
import yaml

from cli import OpenStackCLI
import report
from stack import IMAGE, REGION

CLASS = "magnum_tempest_plugin.tests.api.v1.test_cluster.ClusterTest"
TESTS = [  # magnum-tempest-plugin 1.7.0, test_cluster
    "test_create_cluster_for_nonexisting_cluster_template",
    "test_create_cluster_with_nonexisting_flavor",
    "test_create_cluster_with_zero_masters",
    "test_create_cluster_with_zero_nodes",
    "test_create_list_sign_delete_clusters",
    "test_delete_cluster_for_nonexisting_cluster",
    "test_update_cluster_for_nonexisting_cluster",
]
EXPLAINED = {
    "test_create_cluster_with_zero_nodes": (
        "Resizing a nodegroup to zero is not supported in the provided microversion",
        "Magnum's API refuses node_count 0 below microversion 1.10; the plugin sends none "
        "(1.1). The CLI, which negotiates 1.10, creates it: test_zero_nodes_through_the_cli"),
}
KEYPAIR = "tempest-magnum-key"
TIMEOUT = 600


def _config(stack, ws):
    accounts = os.path.join(ws, "etc", "accounts.yaml")
    with open(accounts, "w") as f:
        yaml.safe_dump([
            {"username": "tempest", "project_name": "tempest", "domain_name": "Default",
             "password": stack.passwords["tempest"], "roles": ["member"]},
            {"username": "admin", "project_name": "admin", "domain_name": "Default",
             "password": stack.passwords["admin"], "roles": ["admin"]},
        ], f)
    os.chmod(accounts, 0o600)
    conf = os.path.join(ws, "etc", "tempest.conf")
    with open(conf, "w") as f:
        f.write("""[DEFAULT]
log_file = {ws}/tempest.log
[auth]
use_dynamic_credentials = false
test_accounts_file = {accounts}
default_credentials_domain_name = Default
create_isolated_networks = false
admin_username = admin
admin_password = {admin_password}
admin_project_name = admin
admin_domain_name = Default
[identity]
auth_version = v3
uri_v3 = {auth_url}
region = {region}
[identity-feature-enabled]
api_v2 = false
[service_available]
magnum = true
neutron = false
cinder = false
glance = false
swift = false
[magnum]
image_id = {image}
nic_id = public
keypair_name = {keypair}
flavor_id = m1.medium
master_flavor_id = m1.large
dns_nameserver = 8.8.8.8
network_driver = calico
copy_logs = false
cluster_creation_timeout = 10
""".format(ws=ws, accounts=accounts, admin_password=stack.passwords["admin"],
           auth_url=stack.auth_url, region=REGION, image=IMAGE, keypair=KEYPAIR))
    os.chmod(conf, 0o600)
    return conf


def _parse(stream):
    """{test name: (status, details text)} from tempest's subunit v2 output."""
    out = {}

    def on_test(test):
        name = re.sub(r"\[.*\]$", "", test["id"])
        if name.startswith(CLASS + "."):
            name = name[len(CLASS) + 1:]
        details = []
        for k, v in (test.get("details") or {}).items():
            if k in ("traceback", "reason"):
                try:
                    details.append(v.as_text())
                except Exception:  # noqa: BLE001 - a detail that is not text
                    pass
        out[name] = (test["status"], "\n".join(details))

    result = testtools.StreamToDict(on_test)
    result.startTestRun()
    subunit.ByteStreamToStreamResult(io.BytesIO(stream), non_subunit_name="stdout").run(result)
    result.stopTestRun()
    return out


@pytest.fixture(scope="module")
def tempest(stack):
    ws = os.path.join(stack.dir, "tempest")
    # The workspace registry stays in the work directory (not ~/.tempest/workspace.yaml,
    # where a second run's workspace of the same name would be refused).
    p = subprocess.run(["/usr/bin/tempest", "init", "--name", "e2e-magnum", "--workspace-path",
                        os.path.join(stack.dir, "tempest-workspaces.yaml"), ws],
                       capture_output=True, text=True, cwd=stack.dir)  # it logs to ./tempest.log
    assert p.returncode == 0, "tempest init: %s%s" % (p.stdout, p.stderr)
    _config(stack, ws)
    stack.nova.keypairs.pop(KEYPAIR, None)  # trap 2: it must not exist when the class starts
    start = time.monotonic()
    p = subprocess.run(["/usr/bin/tempest", "run", "--serial", "--subunit", "--regex",
                        r"^magnum_tempest_plugin\.tests\.api\.v1\.test_cluster\."],
                       cwd=ws, capture_output=True, timeout=TIMEOUT,
                       env=dict(os.environ, TEMPEST_CONFIG_DIR=os.path.join(ws, "etc")))
    took = time.monotonic() - start
    with open(stack.log("tempest-run"), "wb") as f:
        f.write(p.stderr)
    results = _parse(p.stdout)
    report.NOTES.append("tempest test_cluster ran in %.0fs" % took)
    for name, (status, detail) in results.items():
        why = ""
        if name in EXPLAINED and status == "fail" and EXPLAINED[name][0] in detail:
            why = "explained: " + EXPLAINED[name][1]
        elif status != "success":
            why = detail.strip().splitlines()[-1][:200] if detail.strip() else ""
        report.TEMPEST[name] = (status, why)
    return results


def test_tempest_ran_the_plugins_cluster_tests(tempest):
    assert sorted(n for n in tempest if not n.startswith(("setUpClass", "tearDownClass"))) \
        == sorted(TESTS), tempest.keys()
    for fixture in ("setUpClass", "tearDownClass"):
        bad = {n: r for n, r in tempest.items() if n.startswith(fixture)
               and r[0] not in ("success", "skip")}
        assert not bad, bad


@pytest.mark.parametrize("name", TESTS)
def test_tempest(tempest, name):
    assert name in tempest, "tempest did not run %s" % name
    status, detail = tempest[name]
    if name in EXPLAINED:
        assert status == "fail" and EXPLAINED[name][0] in detail, (
            "%s: expected the explained refusal (%s), got %s:\n%s"
            % (name, EXPLAINED[name][0], status, detail[-3000:]))
        return
    assert status == "success", "%s: %s\n%s" % (name, status, detail[-3000:])


def test_tempest_left_nothing_behind(stack, tempest):
    """Every cluster tempest made is gone from Magnum, Keystone and Git."""
    assert stack.query("SELECT uuid, status FROM cluster WHERE project_id = %s",
                       stack.projects["tempest"].id) == ()
    s = stack.session("tempest", "tempest")
    r = s.get(stack.auth_url + "/users/%s/application_credentials" % s.get_user_id())
    assert r.json()["application_credentials"] == [], "application credentials left"
    prefix = "clusters/magnum/magnum-%s/" % stack.projects["tempest"].id
    deadline = time.monotonic() + 60
    while [f for f in stack.git.files() if f.startswith(prefix) and "/" in f[len(prefix):]]:
        assert time.monotonic() < deadline, stack.git.files()
        time.sleep(0.5)


def test_zero_nodes_through_the_cli(stack):
    """What test_create_cluster_with_zero_nodes asks, with microversion 1.10 (the CLI's)."""
    cli = OpenStackCLI(stack, "tempest", "tempest", stack.log("cli"))
    cli("coe", "cluster", "template", "create", "zero-nodes", "--coe", "kubernetes",
        "--image", IMAGE, "--external-network", "public", "--flavor", "m1.medium",
        "--master-flavor", "m1.large", "--network-driver", "calico", "-f", "json")
    uuid = OpenStackCLI.accepted_uuid(cli("coe", "cluster", "create", "zero",
                                          "--cluster-template", "zero-nodes",
                                          "--node-count", "0"))

    def status():
        rows = stack.query("SELECT status FROM cluster WHERE uuid = %s", uuid)
        return rows[0]["status"] if rows else None

    deadline = time.monotonic() + 90
    while status() != "CREATE_COMPLETE":
        assert time.monotonic() < deadline, (status(), stack.serve_status(uuid))
        time.sleep(1)
    hr = [f for f in stack.git.files() if f.endswith("/helmrelease.yaml")
          and "/zero-" in f]
    assert len(hr) == 1, stack.git.files()
    v = yaml.safe_load(stack.git.show(hr[0]))["spec"]["values"]
    assert [(g["name"], g["machineCount"]) for g in v["nodeGroups"]] == [("default-worker", 0)]
    cli("coe", "cluster", "delete", uuid)
    deadline = time.monotonic() + 90
    while status() is not None:
        assert time.monotonic() < deadline, (status(), stack.serve_status(uuid))
        time.sleep(1)
    cli("coe", "cluster", "template", "delete", "zero-nodes")


def test_stand_ins_were_asked_only_what_they_answer(stack):
    """Nova, Neutron and Cinder are stand-ins: every request Magnum, the shim and tempest made
    of them during the run is one they were built for (and carried a valid token)."""
    for s in stack.standins:
        assert s.unexpected == [], (s.service, s.unexpected)
        assert s.requests, "%s was never asked: is it still needed?" % s.service
