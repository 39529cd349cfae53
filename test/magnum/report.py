"""What the run measured and saw, printed at the end of the run (conftest's terminal
summary) and written as JSON to $E2E_MAGNUM_REPORT when that is set.

Figures are a scripted measurement, never an assertion: for each operation, the time from
the CLI call to the event reaching serve, from the event to its commit reaching the Git
remote, and from that push to Magnum showing the operation *_COMPLETE, split at the moment
Flux applied the commit (the stand-in's, or the real Kustomization's) and, with the real
controllers, at the moment Cluster API was done.
"""

import json
import os

FIGURES = []     # dicts: operation, cli_to_event, event_to_push, push_to_applied,
                 # applied_to_complete, push_to_complete (seconds)
TEMPEST = {}     # test id -> (outcome, detail)
BRINGUP = {}     # piece -> seconds
NOTES = []       # one-line observations worth reading after the run


def figure(operation, cli, event, push, applied, complete, capi=None):
    """capi: when the real Cluster API was done (None with the stand-in)."""
    def d(a, b):
        return None if a is None or b is None else round(b - a, 2)
    FIGURES.append({"operation": operation, "cli_to_event": d(cli, event),
                    "event_to_push": d(event, push), "push_to_applied": d(push, applied),
                    "applied_to_capi": d(applied, capi), "capi_to_complete": d(capi, complete),
                    "applied_to_complete": d(applied, complete),
                    "push_to_complete": d(push, complete), "cli_to_complete": d(cli, complete)})


def lines():
    out = []
    if BRINGUP:
        out.append("bring-up (s): " + ", ".join("%s %.1f" % kv for kv in BRINGUP.items()))
    if FIGURES:
        real = any(f["applied_to_capi"] is not None for f in FIGURES)
        out.append("figures (seconds; %s; Magnum's status job runs every 10 s):" % (
            "real Flux and Cluster API, CAPD's in-memory machines" if real else
            "Flux/CAPI is a stand-in that applies each push within ~1 s"))
        cols = ("cli_to_event", "event_to_push", "push_to_applied") + (
            ("applied_to_capi", "capi_to_complete") if real else ()) + (
            "applied_to_complete", "push_to_complete", "cli_to_complete")
        out.append("  %-18s " % "operation" + " ".join("%19s" % c for c in cols))
        for f in FIGURES:
            out.append("  %-18s " % f["operation"] + " ".join(
                "%19s" % ("-" if f[c] is None else "%.2f" % f[c]) for c in cols))
    if TEMPEST:
        out.append("magnum-tempest-plugin test_cluster:")
        for test, (outcome, detail) in sorted(TEMPEST.items()):
            out.append("  %-8s %s%s" % (outcome, test, ("  -- " + detail) if detail else ""))
    for n in NOTES:
        out.append("note: " + n)
    return out


def write():
    path = os.environ.get("E2E_MAGNUM_REPORT")
    if not path:
        return
    with open(path, "w") as f:
        json.dump({"bringup": BRINGUP, "figures": FIGURES, "tempest": TEMPEST,
                   "notes": NOTES}, f, indent=2)
