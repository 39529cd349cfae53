"""Faults in the middle of operations, against the real processes: serve killed (SIGKILL)
right after its push landed and before it heard so, and again while Flux has not applied an
operation; magnum-conductor killed, and restarted, while an operation is in progress;
RabbitMQ restarted while an operation is in progress. Every operation must
reach its *_COMPLETE, every event be committed exactly once, and none be lost.

The steps share one cluster of their own and run after test_lifecycle.py (conftest.py
orders the modules). Flux and Cluster API are the FluxCAPIStandIn (fluxcapi.py).
"""

import collections
import threading
import time
import types

import pytest

from cli import OpenStackCLI
from stack import IMAGE, KEYPAIR
from watch import Watch, gone, status_is, wait_event

NAME = "fault-a"
TEMPLATE = "k8s-faults"

S = types.SimpleNamespace(uuid=None, watch=None, operations=[])


@pytest.fixture(scope="module")
def cli(stack):
    return OpenStackCLI(stack, "demo", "demo", stack.log("cli-faults"))


@pytest.fixture(scope="module", autouse=True)
def _stop_watch():
    yield
    if S.watch is not None:
        S.watch.stop()


@pytest.fixture
def cluster(stack):
    """The cluster's uuid once no operation is in progress; fails when create did not run."""
    if S.uuid is None:
        pytest.fail("no cluster: the create step failed or did not run")
    S.watch.settled(60)
    return S.uuid


def commits_of(stack, uuid):
    return [c for c in stack.git.commits() if c["trailers"].get("Magnum-Cluster-UUID") == uuid]


def once_each(stack, uuid):
    """Every event id of the cluster's commits is carried by exactly one commit."""
    ids = collections.Counter(c["trailers"]["Magnum-Event-ID"] for c in commits_of(stack, uuid)
                              if "Magnum-Event-ID" in c["trailers"])
    twice = {i: n for i, n in ids.items() if n > 1}
    assert not twice, "event ids committed more than once: %s" % twice
    return ids


def resize(stack, cli, count, t0=None):
    t0 = t0 or time.time()
    cli("coe", "cluster", "resize", NAME, str(count))
    event = wait_event(stack, S.uuid, "resize_cluster", t0)
    assert event["outcome"] == "committed", event
    S.operations.append(event)
    return t0, event


def completes(stack, cli, count, since, timeout=90):
    # Magnum saves the new count before it marks the cluster UPDATE_IN_PROGRESS: the
    # operation has begun only once the cluster was seen in progress.
    since = S.watch.wait("UPDATE_IN_PROGRESS", status_is("UPDATE_IN_PROGRESS"), timeout, since)
    S.watch.wait("UPDATE_COMPLETE with %d workers" % count, lambda s: status_is(
        "UPDATE_COMPLETE", **{"default-worker": "UPDATE_COMPLETE"})(s)
        and s["groups"]["default-worker"][1] == count, timeout, since)
    c = cli("coe", "cluster", "show", NAME, "-f", "json")
    assert (c["status"], c["node_count"]) == ("UPDATE_COMPLETE", count), c


def test_01_create_with_serve_killed_after_its_push(stack, cli):
    """The push lands, serve dies before it hears so: the shim's retry (same event id, same
    body) reaches the restarted serve, which answers it from the commit that carried it."""
    cli("coe", "cluster", "template", "create", TEMPLATE, "--coe", "kubernetes",
        "--image", IMAGE, "--external-network", "public", "--fixed-network", "private",
        "--fixed-subnet", "private-subnet", "--flavor", "m1.medium", "--master-flavor",
        "m1.large", "--keypair", KEYPAIR, "--labels", "capi_helm_chart_version=0.27.0")
    killed = threading.Event()

    def kill():
        stack.kill_serve()
        killed.set()
    stack.git.before_push_answer = kill
    t0 = time.time()
    out = cli("coe", "cluster", "create", NAME, "--cluster-template", TEMPLATE,
              "--master-count", "1", "--node-count", "1")
    S.uuid = OpenStackCLI.accepted_uuid(out)
    S.watch = Watch(stack, S.uuid)
    assert killed.wait(60), "serve pushed nothing within 60 s of the create"
    landed = commits_of(stack, S.uuid)
    assert [c["trailers"]["Magnum-Operation"] for c in landed] == ["create_cluster"], landed
    stack.start_serve_again()

    event = wait_event(stack, S.uuid, "create_cluster", t0)
    assert (event["outcome"], event.get("replayed"), event["commit"]) == (
        "committed", True, landed[0]["sha"]), event
    S.operations.append(event)
    S.watch.wait("CREATE_COMPLETE", status_is("CREATE_COMPLETE", **{
        "default-master": "CREATE_COMPLETE", "default-worker": "CREATE_COMPLETE"}), 90, t0)
    assert once_each(stack, S.uuid) == {event["event_id"]: 1}


def test_02_resize_with_serve_killed_before_flux_applied(stack, cli, cluster):
    """serve dies while the operation waits for Flux; the restarted serve reads the
    operation back from Git and finishes it."""
    with stack.flux.hold():
        t0, event = resize(stack, cli, 2)
        time.sleep(1)
        assert S.watch.current()["status"] == "UPDATE_IN_PROGRESS", S.watch.current()
        stack.kill_serve()
        stack.start_serve_again()
    completes(stack, cli, 2, t0)
    once_each(stack, cluster)


def test_03_resize_with_the_conductor_killed_in_progress(stack, cli, cluster):
    """magnum-conductor dies while the cluster is UPDATE_IN_PROGRESS; the new conductor's
    status job finishes the operation."""
    with stack.flux.hold():
        t0, event = resize(stack, cli, 3)
        # Magnum saves the cluster UPDATE_IN_PROGRESS only once the driver returned, after
        # serve had the event: a kill before that save leaves Magnum's record
        # UPDATE_COMPLETE, and no status job looks at it again.
        S.watch.wait("UPDATE_IN_PROGRESS before the kill", status_is("UPDATE_IN_PROGRESS"),
                     30, t0)
        stack.restart_conductor(kill=True)
    completes(stack, cli, 3, t0)


def test_04_update_with_the_conductor_restarted(stack, cli, cluster):
    """magnum-conductor stopped (SIGTERM, as systemd restarts it) and started again while a
    cluster update (PATCH node_count, which magnum-api casts) is in progress. (A request
    while no conductor runs at all cannot reach any driver: magnum-api reads every object
    through the conductor and answers 500 after rpc_response_timeout.)"""
    with stack.flux.hold():
        t0 = time.time()
        cli("coe", "cluster", "update", NAME, "replace", "node_count=2")
        event = wait_event(stack, cluster, "update_cluster", t0)
        assert event["outcome"] == "committed", event
        S.operations.append(event)
        stack.restart_conductor()
    completes(stack, cli, 2, t0)


def test_05_resize_with_rabbitmq_restarted(stack, cli, cluster):
    """RabbitMQ restarts while an operation is in progress: it completes, and the next
    operation goes through the conductor's new connection."""
    reconnects = stack.log_count("magnum-conductor", "Reconnected to AMQP server")
    with stack.flux.hold():
        t0, event = resize(stack, cli, 3)
        stack.restart_rabbitmq()
    completes(stack, cli, 3, t0)
    # Magnum's queues are not durable (amqp_durable_queues=False, its default): until the
    # conductor has reconnected and declared its queue again, a cast has nowhere to go.
    deadline = time.monotonic() + 60
    while stack.log_count("magnum-conductor", "Reconnected to AMQP server") == reconnects:
        assert time.monotonic() < deadline, "magnum-conductor did not reconnect to RabbitMQ"
        time.sleep(0.5)
    t1, event = resize(stack, cli, 1)
    completes(stack, cli, 1, t1)


def test_06_delete_and_every_event_once(stack, cli, cluster):
    t0 = time.time()
    cli("coe", "cluster", "delete", NAME)
    event = wait_event(stack, cluster, "delete_cluster", t0)
    S.operations.append(event)
    S.watch.wait("the cluster gone", gone, 90, t0)
    # The delete's second phase: the Secrets, then the directory, leave Git.
    deadline = time.monotonic() + 60
    while commits_of(stack, cluster)[-1]["trailers"]["Magnum-Operation"] != \
            "delete_cluster_complete":
        assert time.monotonic() < deadline, commits_of(stack, cluster)[-1]
        time.sleep(0.5)
    # Nothing lost: every operation's event is in Git; nothing twice.
    ids = once_each(stack, cluster)
    for op in S.operations:
        assert ids.get(op["event_id"]) == 1, (op, ids)
    ops = [c["trailers"]["Magnum-Operation"] for c in commits_of(stack, cluster)]
    assert ops == [op["operation"] for op in S.operations] + [
        "delete_cluster_secrets", "delete_cluster_complete"], ops
    cli("coe", "cluster", "template", "delete", TEMPLATE)


def test_07_create_with_a_wrong_ca_file(stack, cli):
    """The shim verifies serve's certificate with [gitops] ca_file: with a CA that did not
    issue it, the create fails at once with a reason an operator reads (TLS, the URL, the
    verification failure), and no event reaches serve; with the right CA again, the next
    operation goes through."""
    stack.trust_ca(stack.wrong_ca_file)
    try:
        cli("coe", "cluster", "template", "create", TEMPLATE + "-ca", "--coe", "kubernetes",
            "--image", IMAGE, "--external-network", "public", "--fixed-network", "private",
            "--fixed-subnet", "private-subnet", "--flavor", "m1.medium", "--master-flavor",
            "m1.large", "--keypair", KEYPAIR, "--labels", "capi_helm_chart_version=0.27.0")
        events = len(stack.serve_events())
        t0 = time.time()
        uuid = OpenStackCLI.accepted_uuid(cli("coe", "cluster", "create", NAME + "-ca",
                                              "--cluster-template", TEMPLATE + "-ca",
                                              "--master-count", "1", "--node-count", "1"))
        deadline = time.monotonic() + 60
        while True:
            c = cli("coe", "cluster", "show", uuid, "-f", "json")
            if c["status"] != "CREATE_IN_PROGRESS":
                break
            assert time.monotonic() < deadline, c
            time.sleep(1)
        assert c["status"] == "CREATE_FAILED", c
        reason = c["status_reason"]
        for words in ("TLS with magnum-gitops at " + stack.serve_url + " failed",
                      "CERTIFICATE_VERIFY_FAILED"):
            assert words in reason, reason
        assert len(stack.serve_events()) == events, "an event reached serve over TLS it could not verify"
        assert time.time() - t0 < 30, "the shim retried a certificate failure"
    finally:
        stack.trust_ca(stack.serve_ca_file)
    # The right CA again: the failed cluster's delete goes through serve.
    t1 = time.time()
    cli("coe", "cluster", "delete", uuid)
    deadline = time.monotonic() + 90
    while True:
        rc, out, _ = cli.run("coe", "cluster", "show", uuid, "-f", "json")
        if rc != 0:
            break
        assert time.monotonic() < deadline, out
        time.sleep(1)
    assert wait_event(stack, uuid, "delete_cluster", t1)["outcome"] in ("committed", "unchanged")
    cli("coe", "cluster", "template", "delete", TEMPLATE + "-ca")
