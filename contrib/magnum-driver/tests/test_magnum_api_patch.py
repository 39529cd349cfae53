"""What Magnum's real API accepts in PATCH /v1/clusters/{id}: the recording the Go tests'
Magnum stand-ins are held to (status/report/testdata/magnum-15-cluster-patch.json).

``magnum-gitops serve`` PATCHes health_status, health_status_reason and node_count; its
tests cannot run magnum-api (RabbitMQ, a conductor), so they use a stand-in. This test
drives Magnum's own API code in-process (its pecan app, ``ClustersController.patch`` at
microversion 1.10, wsme validation, ``api_utils.apply_jsonpatch``) over Magnum's test DB,
with the conductor RPC captured, and checks every recorded request still gets the
recorded answer. ``MAGNUM_GITOPS_RECORD=1`` rewrites the recording instead.
"""

import json
import os
import re
from unittest import mock

from magnum.conductor import api as rpcapi
from magnum.tests.unit.api import base as api_base
from magnum.tests.unit.objects import utils as obj_utils

from magnum_gitops_driver import event as event_mod

RECORDING = os.path.join(os.path.dirname(__file__), "..", "..", "..", "status", "report",
                         "testdata", "magnum-15-cluster-patch.json")
MICROVERSION = "container-infra 1.10"

# The reason map TestMagnumReporterRecording (status/report) reports; its request below is
# byte for byte what MagnumReporter.Report sends for it.
REPORTED_REASON = {"cluster": "Ready", "controlplane": "Waiting on ['MachinesReady']",
                   "infrastructure": "Ready", "nodegroup": "Ready"}


def _go_json(value):
    """json.Marshal's text for a string map: sorted keys, no spaces, <>&, U+2028 and
    U+2029 escaped, other characters as they are."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                    ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(ch, esc)
    return text


def _stable(message):
    """An error message without what changes between runs: the address in the repr of an
    AST node, the order of an enum's values (a set)."""
    message = re.sub(r" at 0x[0-9a-f]+", "", message)
    return re.sub(r"(should be one of: )(.*)$",
                  lambda m: m.group(1) + ", ".join(sorted(m.group(2).split(", "))), message)


def _replace(path, value):
    return {"op": "replace", "path": path, "value": value}


ESCAPED_REASON = {"nodegroup": 'gpu waiting on [\'Ready\'] <"x" & \\y> \u00e9\u2028'}

CASES = [
    ("magnum-gitops reporter: health and node_count, the reason as JSON text",
     [_replace("/health_status", "UNHEALTHY"),
      _replace("/health_status_reason", _go_json(REPORTED_REASON)),
      _replace("/node_count", 6)]),
    ("the reason as JSON text with json.Marshal's escapes",
     [_replace("/health_status", "UNHEALTHY"),
      _replace("/health_status_reason", _go_json(ESCAPED_REASON))]),
    ("the reason as a JSON object (what serve sent before)",
     [_replace("/health_status", "HEALTHY"),
      _replace("/health_status_reason", {"cluster": "Ready"})]),
    ("the reason as text that is no mapping",
     [_replace("/health_status_reason", "Ready")]),
    ("an empty reason",
     [_replace("/health_status", "HEALTHY"), _replace("/health_status_reason", "{}")]),
    ("health_status only", [_replace("/health_status", "HEALTHY")]),
    ("an unknown health_status", [_replace("/health_status", "SICK")]),
    ("node_count 0 at 1.10", [_replace("/node_count", 0)]),
    ("a field Magnum computes", [_replace("/api_address", "https://192.0.2.1:6443")]),
]


class TestMagnumClusterPatch(api_base.FunctionalTest):

    def setUp(self):
        super(TestMagnumClusterPatch, self).setUp()
        self.cluster = obj_utils.create_test_cluster(
            self.context, name="prod-a", node_count=3, health_status="UNKNOWN",
            health_status_reason={})
        self.calls = []
        p = mock.patch.object(rpcapi.API, "cluster_update_async",
                              side_effect=lambda cluster, node_count, health_status,
                              health_status_reason, rollback=False: self.calls.append(
                                  {"node_count": node_count, "health_status": health_status,
                                   "health_status_reason": health_status_reason}))
        p.start()
        self.addCleanup(p.stop)

    def _patch(self, body):
        del self.calls[:]
        resp = self.patch_json("/clusters/%s" % self.cluster.uuid, body, expect_errors=True,
                               headers={"OpenStack-API-Version": MICROVERSION})
        out = {"status": resp.status_int}
        if resp.status_int == 202:
            self.assertEqual(1, len(self.calls))
            out["conductor"] = self.calls[0]
        else:
            self.assertEqual([], self.calls)
            out["error"] = _stable(resp.json["errors"][0]["detail"])
        return out

    def test_recorded_answers(self):
        version = event_mod.magnum_version()
        got = {"recorded_with": "python3-magnum %s: magnum.api.controllers.v1.cluster."
               "ClustersController.patch in-process (contrib/magnum-driver/tests/"
               "test_magnum_api_patch.py), microversion %s; \"conductor\" is what the API "
               "hands to cluster_update_async" % (version, MICROVERSION.split()[1]),
               "cases": [dict(name=name, request=body, **self._patch(body))
                         for name, body in CASES]}
        if os.environ.get("MAGNUM_GITOPS_RECORD"):
            with open(RECORDING, "w") as f:
                json.dump(got, f, indent=2)
                f.write("\n")
            return
        with open(RECORDING) as f:
            want = json.load(f)
        if want["recorded_with"] != got["recorded_with"]:
            self.skipTest("recorded with another Magnum: %s" % want["recorded_with"])
        self.assertEqual(want["cases"], got["cases"])

    def test_reason_map_reaches_the_conductor_as_sent(self):
        out = self._patch(CASES[0][1])
        self.assertEqual(202, out["status"])
        self.assertEqual(REPORTED_REASON, out["conductor"]["health_status_reason"])
        self.assertEqual(6, out["conductor"]["node_count"])
        out = self._patch(CASES[1][1])
        self.assertEqual(ESCAPED_REASON, out["conductor"]["health_status_reason"])
