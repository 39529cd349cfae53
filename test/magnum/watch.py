"""Watching Magnum and serve while an operation runs: Magnum's rows read every 0.2 s
(Watch), and serve's log line for an event once it is answered (wait_event)."""

import datetime
import re
import threading
import time


class Watch(object):
    """Reads the cluster's row and its node groups' rows from Magnum's database every
    0.2 s and keeps every change with its time: what Magnum showed between two CLI calls,
    and when it first showed a status (the figures)."""

    def __init__(self, stack, uuid):
        self.stack, self.uuid = stack, uuid
        self.states = []  # (time, state); state None once the row is gone
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self.error = None
        self.thread = threading.Thread(target=self._loop, name="magnum-watch", daemon=True)
        self.thread.start()

    def stop(self):
        self._stop.set()
        self.thread.join(timeout=10)

    def _read(self, db):
        c = db.cursor()
        c.execute("SELECT id, status, status_reason FROM cluster WHERE uuid = %s",
                  (self.uuid,))
        row = c.fetchone()
        if row is None:
            return None
        c.execute("SELECT name, status, status_reason, node_count, max_node_count "
                  "FROM nodegroup WHERE cluster_id = %s", (self.uuid,))
        groups = {g["name"]: (g["status"], g["node_count"], g["max_node_count"])
                  for g in c.fetchall()}
        return {"status": row["status"], "reason": row["status_reason"], "groups": groups}

    def _loop(self):
        try:
            with self.stack.db() as db:
                while not self._stop.is_set():
                    state = self._read(db)
                    now = time.time()
                    with self.lock:
                        if not self.states or self.states[-1][1] != state:
                            self.states.append((now, state))
                    if state is None:
                        return
                    self._stop.wait(0.2)
        except Exception as e:  # noqa: BLE001 - reported by wait()
            self.error = e

    def settled(self, timeout):
        """Waits until no operation is in progress (a failed step may have left one
        running), at most timeout seconds stretched by the stack's patience."""
        deadline = time.monotonic() + timeout * self.stack.patience
        while (self.current() or {}).get("status", "").endswith("_IN_PROGRESS"):
            assert time.monotonic() < deadline, "still in progress: %s" % self.current()
            time.sleep(0.2)

    def current(self):
        with self.lock:
            return self.states[-1][1] if self.states else {}

    def since(self, t):
        with self.lock:
            return [s for at, s in self.states if at >= t]

    def wait(self, what, pred, timeout, since=0.0):
        """The time Magnum first showed a state with pred(state) true, at or after since;
        timeout is what the stand-in needs, stretched by the stack's patience."""
        timeout *= self.stack.patience
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                for at, state in self.states:
                    if at >= since and pred(state):
                        return at
            if self.error is not None:
                raise AssertionError("reading Magnum's rows failed: %r" % self.error)
            if time.monotonic() > deadline:
                raise AssertionError(
                    "Magnum did not show %s within %ss; it shows %s; serve says %s"
                    % (what, timeout, self.current(), self.stack.serve_status(self.uuid)))
            time.sleep(0.1)


def status_is(status, **groups):
    def pred(state):
        if state is None or state["status"] != status:
            return False
        return all(state["groups"].get(g, (None,))[0] == s for g, s in groups.items())
    return pred


def gone(state):
    return state is None


def log_time(text):
    """RFC 3339 with nanoseconds (slog's JSON) -> seconds since the epoch."""
    m = re.match(r"(.*T\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$", text)
    frac = (m.group(2) or ".0")[:7]
    zone = "+00:00" if m.group(3) == "Z" else m.group(3)
    return datetime.datetime.fromisoformat(m.group(1) + frac + zone).timestamp()


def wait_event(stack, uuid, operation, since, timeout=60):
    """serve's log line for the cluster's next event of this operation, once it is answered;
    its "arrived" is when serve began handling it (answer time minus its duration)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for rec in stack.serve_events():
            if (rec.get("cluster") == uuid and rec.get("operation") == operation
                    and log_time(rec["time"]) >= since):
                rec["arrived"] = log_time(rec["time"]) - rec["duration"] / 1e9
                return rec
        time.sleep(0.1)
    raise AssertionError("serve received no %s event for %s within %ss; its log ends:\n%s"
                         % (operation, uuid, timeout, "\n".join(
                             str(e) for e in stack.serve_events()[-3:])))
