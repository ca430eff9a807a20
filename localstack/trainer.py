"""A Kubeflow Trainer stand-in for the local stack: moves TrainJobs the way the Trainer (and a queue such as
Kueue, for suspend/resume) would, following a script per attempt.

A script maps an attempt number (`crefn.dev/attempt`) to a list of actions (`ACTIONS`) applied in order, each
once the event plane is quiet. `script_from_recording` recovers such a script from a recorded event log,
which is how a recording is reproduced. Given the cluster's stand-in kubelet, an action also keeps the
attempt's pods (`localstack.cluster.pods.apply_pods`) and writes them before the TrainJob, as a real
TrainJob's status follows its pods; without one, only the TrainJob changes.
What each action writes: localstack/README.md#the-trainer-simulator.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from events.types import ATTEMPT_LABEL, CRE_GROUP_DEFAULT
from functions.runtime.errors import CrefnError
from functions.runtime.gateway import Gateway
from functions.runtime.resources import TRAINJOBS
from localstack.cluster.pods import apply_pods

if TYPE_CHECKING:
    from localstack.cluster.kubelet import StandInKubelet

Script = dict[int, list[str]]
ACTIONS = ("resume", "suspend", "run", "block", "fail", "complete", "delete")
STAMP = "2026-01-01T00:00:00Z"


def apply_action(gw: Gateway, trainjob: dict[str, Any], action: str, kubelet: StandInKubelet | None = None,
                 clock: Callable[[], int] = time.time_ns) -> None:
    """One action on a TrainJob, and on its attempt's pods when `kubelet` is given, their logs written at `clock`
    (ns; the deleted TrainJob's pods are left, as no garbage collector runs on the local API server)."""
    meta = trainjob["metadata"]
    ns, name = meta["namespace"], meta["name"]
    if kubelet is not None:
        apply_pods(gw, kubelet, trainjob, action, clock)
    if action == "delete":
        gw.delete(TRAINJOBS, ns, name, uid=meta["uid"])
        return
    if action in ("resume", "suspend"):
        gw.patch(TRAINJOBS, ns, name, {"spec": {"suspend": action == "suspend"}})
        return
    conditions = {
        "run": None,
        "block": None,
        "fail": [{"type": "Failed", "status": "True", "reason": "JobsFailed", "lastTransitionTime": STAMP,
                  "message": "jobset node-0 failed: exit code 137 (OOMKilled)"}],
        "complete": [{"type": "Complete", "status": "True", "reason": "JobsCompleted", "lastTransitionTime": STAMP,
                      "message": "all jobs completed"}],
    }[action]
    active = 2 if action in ("run", "block") else 0
    done = 2 if action == "complete" else 0
    gw.patch(TRAINJOBS, ns, name, {"status": {
        "conditions": conditions,
        "jobsStatus": [{"name": "node", "active": active, "ready": active if action == "run" else 0, "succeeded": done,
                        "failed": 1 if action == "fail" else 0, "suspended": 0}]}}, status=True)


@dataclass
class TrainerSimulator:
    """Applies a script to the TrainJobs of one Job; `quiet()` says when the next action may go."""

    gateway: Gateway
    namespace: str
    job: str
    script: Script
    quiet: Callable[[], bool]
    cre_group: str = CRE_GROUP_DEFAULT
    step_delay: float = 0.5
    on_action: Callable[[int, str], None] | None = None
    kubelet: StandInKubelet | None = None
    done: list[tuple[int, str]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> TrainerSimulator:
        self._thread = threading.Thread(target=self._run, daemon=True, name="trainer")
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop and wait for the loop (at most a step and an API call), so that nothing it still does
        outlives its owner's gateway."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10.0)

    @property
    def finished(self) -> bool:
        return len(self.done) == sum(len(v) for v in self.script.values())

    def _current(self) -> dict[str, Any] | None:
        selector = f"{self.cre_group}/job={self.job}"
        items = [t for t in self.gateway.list_all(TRAINJOBS, self.namespace, label_selector=selector)
                 if not t["metadata"].get("deletionTimestamp")]
        return items[0] if items else None

    def _run(self) -> None:
        progress: dict[int, int] = {}
        while not self._stop.is_set() and not self.finished:
            self._stop.wait(self.step_delay)
            try:
                if not self.quiet():
                    continue
                trainjob = self._current()
                if trainjob is None:
                    continue
                attempt = int(trainjob["metadata"].get("labels", {}).get(ATTEMPT_LABEL, "0"))
                steps = self.script.get(attempt, [])
                index = progress.get(attempt, 0)
                if index >= len(steps):
                    continue
                apply_action(self.gateway, trainjob, steps[index], self.kubelet)
                progress[attempt] = index + 1
                self.done.append((attempt, steps[index]))
                if self.on_action:
                    self.on_action(attempt, steps[index])
            except CrefnError:
                continue


def _trainer_state(obj: dict[str, Any]) -> tuple[bool, str]:
    suspended = bool((obj.get("spec") or {}).get("suspend"))
    true = sorted(c["type"] for c in (obj.get("status") or {}).get("conditions") or []
                  if c.get("status") == "True" and c.get("type") in ("Failed", "Complete"))
    return suspended, ",".join(true)


def script_from_recording(records: Iterable[dict[str, Any]], job: str, cre_group: str = CRE_GROUP_DEFAULT) -> Script:
    """The Trainer's (and users') actions on a Job's TrainJobs, recovered from a recorded event log.

    TrainJob changes made by the Trainer show in the ApiServerSource events as a change of suspend or of
    the terminal condition; the first event of an attempt that shows it running is `run`; a delete
    that no `dev.crefn.job.restarted` explains (its previousWorkload uid) was made by someone else.
    """
    records = list(records)
    restarted = {r["data"]["previousWorkload"].get("uid") for r in records
                 if r["attributes"].get("type") == "dev.crefn.job.restarted" and r["attributes"].get("job") == job}
    script: Script = {}
    last: dict[str, tuple[bool, str]] = {}
    running: set[str] = set()
    for r in records:
        attrs = r["attributes"]
        if attrs.get("kind") != "TrainJob" or not str(attrs.get("type", "")).startswith("dev.knative.apiserver"):
            continue
        obj = r["data"]
        meta = obj.get("metadata") or {}
        if (meta.get("labels") or {}).get(f"{cre_group}/job") != job:
            continue
        uid = meta.get("uid", "")
        attempt = int((meta.get("labels") or {}).get(ATTEMPT_LABEL, "0"))
        steps = script.setdefault(attempt, [])
        verb = attrs["type"].rsplit(".", 1)[1]
        if verb == "delete":
            if uid not in restarted and uid in last:
                steps.append("delete")
            last.pop(uid, None)
            continue
        state = _trainer_state(obj)
        before = last.get(uid)
        last[uid] = state
        active = any(j.get("active") for j in (obj.get("status") or {}).get("jobsStatus") or [])
        if before is not None and before[0] != state[0]:
            steps.append("suspend" if state[0] else "resume")
        if active and uid not in running and not state[1]:
            running.add(uid)
            steps.append("run")
        if state[1] and (before is None or before[1] != state[1]):
            steps.append("fail" if "Failed" in state[1] else "complete")
    return {k: v for k, v in script.items() if v}


def wait_until(predicate: Callable[[], bool], timeout: float, interval: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()
