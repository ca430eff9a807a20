"""`python -m localstack soak` (`make soak`): many Jobs through the local stack under chaos, then invariants.

The stack runs with a chaotic Broker (`localstack.eventing.chaos`: drops, duplicates, reorders, delays) and a
resync tick; meanwhile the soak SIGKILLs a random function process every few seconds and the kube-apiserver
once, and the stack's supervisor starts each again. Each Job follows a script drawn from the seed
(`LIFECYCLES`); a few malformed events are posted too. Once every Job is terminal and the Broker has been idle
for a while, it checks against the API server, its audit log and the event log: each Job ends as its script
says; one TrainJob create per attempt; `restartCount ≤ maxRestarts`; dead letters only for the malformed
events. It prints a table and exits 1 on any violation. Everything runs on loopback.
The scripts and the invariants in full:
docs/development.md#chaos-kills-and-the-soak---chaos-python--m-localstack-soak-make-soak.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from events.types import ATTEMPT_LABEL, CRE_GROUP_DEFAULT, CRE_VERSION, MANAGED_LABEL, job_label
from functions.domain.attempts import workload_name
from functions.domain.conditions import true_exclusive
from functions.runtime.client import send
from functions.runtime.errors import AlreadyExists, CrefnError
from functions.runtime.resources import NAMESPACES, TRAINJOBS, cre_goodput, cre_jobs
from functions.tools.paritytable import Table
from functions.tools.replay import read_recording
from localstack.background import Background
from localstack.cluster.kubelet import StandInKubelet
from localstack.cluster.pods import saves
from localstack.eventing.chaos import Chaos, ChaosError
from localstack.scenarios.demo import checkpoint_after
from localstack.serving import wait_for_port
from localstack.stack import Stack, start_stack
from localstack.timeline import Timeline
from localstack.trainer import apply_action

NAMESPACE = "soak"
GROUP = CRE_GROUP_DEFAULT
DEFAULT_CHAOS = "drop=0.05,dup=0.2,reorder=0.2,delay=0-300ms"
PARITY = {"CREFN_PARITY_SETTLE_SECONDS": "30", "CREFN_PARITY_RECHECK_SECONDS": "6"}
"""`parity` beside the functions, in observe mode: a difference that holds 30 s, nothing changed, is a divergence
(a function killed on a busy machine is back in seconds, and the Broker's retries back off meanwhile); the tick
(every 3 s) checks a Job made terminal twice more."""
MALFORMED = 3


@dataclass(frozen=True)
class Lifecycle:
    name: str
    script: dict[int, list[str]]
    expected: tuple[str, str, int]
    checkpoint: int | None = None
    """maxRestarts, with checkpoint evidence; None: no checkpoint."""
    suspended: bool = False


LIFECYCLES = (
    Lifecycle("succeed", {0: ["run", "complete"]}, ("Succeeded", "WorkloadCompleted", 0), checkpoint=2),
    Lifecycle("fail then succeed", {0: ["run", "fail"], 1: ["run", "complete"]}, ("Succeeded", "WorkloadCompleted", 1),
            checkpoint=2),
    Lifecycle("budget spent", {0: ["run", "fail"], 1: ["run", "fail"]}, ("Failed", "WorkloadFailed", 1), checkpoint=1),
    Lifecycle("deleted by hand", {0: ["run", "delete"]}, ("Failed", "WorkloadFailed", 0)),
    Lifecycle("deleted, restarted", {0: ["run", "delete"], 1: ["run", "complete"]},
            ("Succeeded", "WorkloadCompleted", 1), checkpoint=2),
    Lifecycle("suspended, resumed", {0: ["resume", "run", "complete"]}, ("Succeeded", "WorkloadCompleted", 0),
            checkpoint=2, suspended=True),
    Lifecycle("no checkpoint", {0: ["run", "fail"]}, ("Failed", "WorkloadFailed", 0)),
)


@dataclass
class Counts:
    kills: Counter[str] = field(default_factory=Counter)
    actions: int = 0
    driver_errors: int = 0


def job_body(name: str, lifecycle: Lifecycle) -> dict[str, Any]:
    """The Job; one with a checkpoint is measured by CRE's `megatron-training` profile: its checkpoint evidence is
    what the functions' `measure` reads from its pods' logs."""
    spec: dict[str, Any] = {"workload": {"trainJob": {
        "runtimeRef": {"name": "torch-distributed"}, "suspend": lifecycle.suspended,
        "trainer": {"image": "pytorch:25.01", "numNodes": 1}}}}
    if lifecycle.checkpoint is not None:
        spec["checkpoint"] = {"pvcName": f"{name}-ckpt", "maxRestarts": lifecycle.checkpoint}
        spec["goodputMeasurement"] = {"logProfileRef": "megatron-training"}
    return {"apiVersion": f"{GROUP}/{CRE_VERSION}", "kind": "Job",
            "metadata": {"name": name, "labels": {MANAGED_LABEL: "true"}}, "spec": spec}


def create(stack: Stack, name: str, lifecycle: Lifecycle) -> None:
    """The Job; again after an API server restart, what exists is kept."""
    with contextlib.suppress(AlreadyExists):  # a create whose answer was lost when the API server died
        stack.gateway.create(cre_jobs(GROUP), NAMESPACE, job_body(name, lifecycle))


def retrying(what: Any, attempts: int = 60) -> Any:
    """Call `what` until the API server answers (it is killed once during the soak)."""
    for _ in range(attempts):
        try:
            return what()
        except CrefnError:
            time.sleep(0.5)
    return what()


class Driver(Background):
    """The Trainer for every Job at once, with the attempts' pods and their logs (the stand-in kubelet): one LIST of
    the TrainJobs and one of the GoodputMeasurements per step, and each TrainJob's next action once its previous
    one is `step` seconds old. A measured Job's action after `run` waits, at most `measured_within` seconds, for
    its measurement to name a checkpoint the running attempt saved: a real workload trains for hours between two
    samples of the functions' `measure`, this one for seconds."""

    def __init__(self, stack: Stack, scripts: dict[str, Lifecycle], counts: Counts, step: float = 1.0,
                 measured_within: float = 90.0) -> None:
        super().__init__()
        self.stack, self.scripts, self.counts, self.step = stack, scripts, counts, step
        self.measured_within = measured_within
        self.progress: dict[tuple[str, int], int] = {}
        self.last: dict[tuple[str, int], float] = {}
        self.ran: dict[tuple[str, int], int] = {}  # when the attempt's pods were set running (ns, wall clock)

    def unmeasured(self, job: str, attempt: int, steps: list[str], index: int,
                   measured: dict[str, dict[str, Any]]) -> bool:
        """Whether the action after `run` still waits: no checkpoint saved since in the measurement (its times are
        whole seconds; the workload saves its first checkpoint 2.5 s after it starts)."""
        return (self.scripts[job].checkpoint is not None and index > 0 and steps[index - 1] == "run"
                and not checkpoint_after(measured.get(f"{job}-goodput", {}), self.ran.get((job, attempt), 0))
                and time.monotonic() - self.last.get((job, attempt), 0.0) < self.measured_within)

    def _run(self) -> None:
        label = job_label(GROUP)
        while not self._stop.wait(0.3):
            try:
                trainjobs = self.stack.gateway.list_all(TRAINJOBS, NAMESPACE)
                measured = {m["metadata"]["name"]: m.get("status") or {}
                            for m in self.stack.gateway.list_all(cre_goodput(GROUP), NAMESPACE)}
            except CrefnError:
                self.counts.driver_errors += 1
                continue
            now = time.monotonic()
            for tj in trainjobs:
                meta = tj["metadata"]
                job = (meta.get("labels") or {}).get(label, "")
                if job not in self.scripts or meta.get("deletionTimestamp"):
                    continue
                attempt = int((meta.get("labels") or {}).get(ATTEMPT_LABEL, "0"))
                steps = self.scripts[job].script.get(attempt, [])
                key = (job, attempt)
                index = self.progress.get(key, 0)
                if index >= len(steps) or now - self.last.get(key, 0.0) < self.step or \
                        self.unmeasured(job, attempt, steps, index, measured):
                    continue
                try:
                    apply_action(self.stack.gateway, tj, steps[index], self.stack.cluster.kubelet)
                except CrefnError:
                    self.counts.driver_errors += 1
                    continue
                self.progress[key] = index + 1
                self.last[key] = now
                if steps[index] == "run":
                    self.ran[key] = time.time_ns()
                self.counts.actions += 1


class Killer(Background):
    """SIGKILLs a random function process every `every` seconds, and the kube-apiserver once. The next kill waits
    for the last one's function to serve again (as a Deployment replaces a killed pod before the next one dies):
    on a loaded machine a start takes seconds, and kills faster than starts would leave a function down for
    longer than any Trigger's retries, which no cluster is expected to survive."""

    def __init__(self, stack: Stack, rng: random.Random, counts: Counts, every: float, timeline: Timeline) -> None:
        super().__init__()
        self.stack, self.rng, self.counts, self.every, self.timeline = stack, rng, counts, every, timeline

    def _run(self) -> None:
        ticks = 0
        while not self._stop.wait(self.every):
            ticks += 1
            if ticks == 3 and not self.counts.kills["kube-apiserver"]:
                self.timeline.say("!! soak: SIGKILL kube-apiserver")
                self.stack.cluster.kill_apiserver()
                self.counts.kills["kube-apiserver"] += 1
                continue
            name = self.rng.choice(sorted(self.stack.functions))
            self.timeline.say(f"!! soak: SIGKILL function {name}")
            served, killed = self.stack.functions[name], self.stack.functions[name].pid
            served.kill()
            self.counts.kills[name] += 1
            deadline = time.monotonic() + 60
            while (not self._stop.is_set() and time.monotonic() < deadline
                   and (served.pid == killed or not wait_for_port(served.port, 0.2))):
                self._stop.wait(0.1)

    @property
    def apiserver_killed(self) -> bool:
        return bool(self.counts.kills["kube-apiserver"])


def malformed(i: int) -> dict[str, Any]:
    """An event no function can take (the wrong data for its type): a dead letter by design."""
    return {"attributes": {"specversion": "1.0", "id": f"soak-malformed-{i}", "source": "/soak", "subject": "soak/x",
                           "type": "dev.crefn.workload.phase", "workloadphase": "Failed", "namespace": NAMESPACE,
                           "job": "x", "datacontenttype": "application/json"},
            "data": {"not": "a workload phase"}}


def terminal(job: dict[str, Any]) -> bool:
    cond = true_exclusive((job.get("status") or {}).get("conditions") or [])
    return cond is not None and cond.type in ("Succeeded", "Failed")


def state_of(job: dict[str, Any]) -> tuple[str, str, int]:
    status = job.get("status") or {}
    cond = true_exclusive(status.get("conditions") or [])
    return (cond.type if cond else "", cond.reason if cond else "", int(status.get("restartCount") or 0))


def run(jobs: int = 200, seed: int = 1, chaos: str = DEFAULT_CHAOS, kill_every: float = 4.0, timeout: float = 900,
        ping_interval: float = 3.0, out: TextIO = sys.stdout, out_dir: Path = Path("out/soak")) -> int:
    """The soak; its event log, dead letters and function logs go to `out_dir`."""
    try:
        drills = Chaos.parse(f"{chaos},seed={seed}" if "seed=" not in chaos else chaos)
    except ChaosError as e:
        print(f"python -m localstack soak: {e}", file=sys.stderr)
        return 2
    rng = random.Random(seed)
    scripts = {f"soak-{i}": rng.choice(LIFECYCLES) for i in range(jobs)}
    counts = Counts()
    settings = {"CREFN_RESTART_GRACE_SECONDS": "1", "CREFN_LOG_LEVEL": "ERROR"}
    timeline = Timeline(out)
    started = time.monotonic()
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in ("events.jsonl", "dead-letters.jsonl"):
        (out_dir / name).unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="crefn-soak-") as tmp:
        work = Path(tmp)
        timeline.say(f"soak: {jobs} Jobs, seed {seed}, chaos {drills}, a function killed every {kill_every:g}s; "
                     f"event log and dead letters in {out_dir}")
        with start_stack(out_dir, QuietDeliveries(out), settings, ping_interval, work, GROUP, monitoring=False,
                         chaos=drills, parity_observer=PARITY) as stack:
            stack.gateway.create(NAMESPACES, None, {"apiVersion": "v1", "kind": "Namespace",
                                                    "metadata": {"name": NAMESPACE}})
            driver = Driver(stack, scripts, counts).start()
            killer = Killer(stack, rng, counts, kill_every, timeline).start()
            for i, (name, lifecycle) in enumerate(scripts.items(), 1):
                retrying(lambda name=name, lifecycle=lifecycle: create(stack, name, lifecycle))
                if i % 50 == 0:
                    timeline.say(f"soak: {i}/{jobs} Jobs created")
            for i in range(MALFORMED):
                send(stack.broker.url, malformed(i))
            quiet_at = quiescence(stack, jobs, timeout, timeline, killer,
                                  sum(o.checkpoint is not None for o in scripts.values()))
            driver.stop()
            final = {j["metadata"]["name"]: j for j in retrying(lambda: stack.gateway.list_all(cre_jobs(GROUP),
                                                                                              NAMESPACE))}
            measurements = {m["metadata"]["name"]: m for m in retrying(
                lambda: stack.gateway.list_all(cre_goodput(GROUP), NAMESPACE))}
            saved = saved_steps(stack.cluster.kubelet, scripts)
            creates = created(stack.cluster.audited("create", "trainjobs"), read_recording(out_dir / "events.jsonl"))
            lost = stack.broker.dead_letters_lost
            fates = stack.broker.fates.counts if stack.broker.fates else None
            outcomes = list(stack.broker.outcomes)
            restarts = dict(stack.supervisor.restarts) if stack.supervisor else {}
    dead = read_recording(out_dir / "dead-letters.jsonl")  # what the recorder put on disk, read back
    parity = Table().add(read_recording(out_dir / "events.jsonl"))
    violations = (check(scripts, final, creates, dead, lost) + measured_violations(scripts, measurements, saved)
                  + parity_violations(parity))
    table(out, scripts, final, counts, fates, outcomes, dead, restarts, quiet_at - started if quiet_at else None,
          violations, parity, measurements)
    return 1 if violations or quiet_at is None else 0


class QuietDeliveries(Timeline):
    """The soak's timeline: its own lines and the supervisor's, not one line per delivery."""

    def outcome(self, o: Any) -> None:
        pass

    def published(self, record: dict[str, Any]) -> None:
        pass


def quiescence(stack: Stack, jobs: int, timeout: float, timeline: Timeline, killer: Killer,
               measured: int = 0) -> float | None:
    """Wait until every Job is terminal, the `measured` Jobs' measurements complete (frozen by `measure` after the
    verdict) and the Broker idle for 3 s (the killer stops once all are terminal and it has killed the
    kube-apiserver, so a quick run still meets that kill); the time it happened, or None on timeout."""
    deadline = time.monotonic() + timeout
    last_report = 0.0
    while time.monotonic() < deadline:
        try:
            done = sum(terminal(j) for j in stack.gateway.list_all(cre_jobs(GROUP), NAMESPACE))
            frozen = sum(bool((m.get("status") or {}).get("completionTime"))
                         for m in stack.gateway.list_all(cre_goodput(GROUP), NAMESPACE))
        except CrefnError:
            time.sleep(1)
            continue
        if time.monotonic() - last_report > 10:
            timeline.say(f"soak: {done}/{jobs} Jobs terminal, {frozen}/{measured} measurements complete")
            last_report = time.monotonic()
        if done == jobs and killer.apiserver_killed:
            killer.stop()
            if frozen >= measured and stack.broker.wait_idle(timeout=60, quiet=3.0):
                return time.monotonic()
        time.sleep(1)
    killer.stop()
    return None


def created(audited: list[dict[str, Any]], published: list[dict[str, Any]]) -> Counter[str]:
    """TrainJob name → how many were created: the distinct uids of the creates the audit log answered 201
    and of the TrainJobs the ApiServerSource published (a create stored by an API server killed before
    it wrote the audit entry is still seen on the watch)."""
    uids: dict[str, set[str]] = {}
    for entry in audited:
        made = entry.get("responseObject") or {}
        if (entry.get("responseStatus") or {}).get("code") == 201 and made.get("metadata"):
            uids.setdefault(made["metadata"]["name"], set()).add(made["metadata"]["uid"])
    for record in published:
        data = record.get("data")
        obj: dict[str, Any] = data if isinstance(data, dict) else {}
        meta = obj.get("metadata") or {}
        if obj.get("kind") == "TrainJob" and meta.get("uid"):
            uids.setdefault(meta["name"], set()).add(meta["uid"])
    return Counter({name: len(found) for name, found in uids.items()})


def parity_violations(parity: Table) -> list[str]:
    """The functions' verdicts, checked beside them by `parity` in observe mode: any that differs from what they
    would write is a false divergence (they are both sides)."""
    return [f"parity: {d.job.name} {d.verdict}: {f.field}: written {f.cre or '(none)'}, would write "
            f"{f.functions or '(none)'}" for d in parity.differing() for f in d.fields if f.result == "differ"]


def check(scripts: dict[str, Lifecycle], final: dict[str, dict[str, Any]], creates: Counter[str],
          dead: list[dict[str, Any]], lost: int = 0) -> list[str]:
    violations = []
    for name, lifecycle in scripts.items():
        job = final.get(name)
        if job is None:
            violations.append(f"{name}: the Job is gone")
            continue
        got = state_of(job)
        if got != lifecycle.expected:
            violations.append(f"{name} ({lifecycle.name}): {got}, expected {lifecycle.expected}")
        if not terminal(job):
            violations.append(f"{name}: left non-terminal")
        if lifecycle.checkpoint is not None and got[2] > lifecycle.checkpoint:
            violations.append(f"{name}: restartCount {got[2]} > maxRestarts {lifecycle.checkpoint}")
        made = creates.get(workload_name(name), 0)
        if made != got[2] + 1:
            violations.append(f"{name}: {made} TrainJob creates for {got[2] + 1} attempt(s)")
    unexpected = [d["attributes"].get("id") for d in dead
                  if not str(d["attributes"].get("id", "")).startswith("soak-malformed-")]
    if unexpected:
        violations.append(f"{len(unexpected)} dead letters of well-formed events: {unexpected[:5]}")
    if lost:
        violations.append(f"{lost} dead letters the recorder never took")
    return violations


def measured_violations(scripts: dict[str, Lifecycle], measurements: dict[str, dict[str, Any]],
                        saved: dict[str, list[int]]) -> list[str]:
    """Each measured Job's GoodputMeasurement, written by the functions alone (nothing else writes it here): complete;
    its `lastCheckpointStep` one its last attempt's worker saved (`saved`: the Job → the steps its last attempt's
    log saved), none lost or taken from another attempt; each restart counted as one interruption, and a failure
    that ended the Job as one more (CRE's `JobFailed`): none counted twice, whatever the chaos did to the ticks."""
    violations = []
    for name, lifecycle in scripts.items():
        if lifecycle.checkpoint is None:
            continue
        status = (measurements.get(f"{name}-goodput") or {}).get("status") or {}
        step = status.get("lastCheckpointStep")
        if step not in saved.get(name, []):
            violations.append(f"{name} ({lifecycle.name}): lastCheckpointStep {step}, not a checkpoint its last "
                              f"attempt saved ({saved.get(name, [])})")
        want = lifecycle.expected[2] + (lifecycle.expected[0] == "Failed")
        if status.get("interruptionCount") != want:
            violations.append(f"{name} ({lifecycle.name}): interruptionCount {status.get('interruptionCount')}, "
                              f"expected {want}")
        if not status.get("completionTime"):
            violations.append(f"{name} ({lifecycle.name}): its measurement was never completed")
    return violations


def saved_steps(kubelet: StandInKubelet, scripts: dict[str, Lifecycle]) -> dict[str, list[int]]:
    """The steps the last attempt's worker of each measured Job saved, as its log says."""
    found = {}
    for name, lifecycle in scripts.items():
        if lifecycle.checkpoint is not None:
            pod = f"{workload_name(name)}-node-0-0-a{lifecycle.expected[2]}"
            found[name] = saves(kubelet.lines_of(NAMESPACE, pod, "node"))
    return found


def table(out: TextIO, scripts: dict[str, Lifecycle], final: dict[str, dict[str, Any]], counts: Counts, fates: Any,
          outcomes: list[Any], dead: list[dict[str, Any]], restarts: dict[str, int], quiescence_s: float | None,
          violations: list[str], parity: Table, measurements: dict[str, dict[str, Any]]) -> None:
    per_lifecycle = Counter(o.name for o in scripts.values())
    ok = Counter(o.name for n, o in scripts.items() if n in final and state_of(final[n]) == o.expected)
    print("\nsoak summary", file=out)
    print(f"{'lifecycle':<22} {'Jobs':>6} {'as scripted':>12}", file=out)
    for o in LIFECYCLES:
        print(f"{o.name:<22} {per_lifecycle[o.name]:>6} {ok[o.name]:>12}", file=out)
    retries = sum(1 for o in outcomes if o.attempt)
    complete = sum(bool((m.get("status") or {}).get("completionTime")) for m in measurements.values())
    function_kills = sum(v for k, v in counts.kills.items() if k != "kube-apiserver")
    rows = [("deliveries", len(outcomes)), ("retried deliveries", retries),
            ("duplicated (chaos)", fates.duplicated if fates else 0),
            ("dropped (chaos)", fates.dropped if fates else 0),
            ("held back (chaos)", fates.reordered if fates else 0), ("function kills", function_kills),
            ("kube-apiserver kills", counts.kills["kube-apiserver"]),
            ("restarts by the supervisor", sum(restarts.values())), ("Trainer actions", counts.actions),
            ("dead letters (on disk)", len(dead)),
            ("parity checks, differing", f"{len(parity.checks)}, {len(parity.differing())}"),
            ("measured Jobs, complete", f"{sum(o.checkpoint is not None for o in scripts.values())}, {complete}"),
            ("time to quiescence (s)", round(quiescence_s, 1) if quiescence_s is not None else "timed out")]
    for label, value in rows:
        print(f"{label:<28} {value:>10}", file=out)
    print(f"invariants: {'all hold' if not violations else f'{len(violations)} violated'}", file=out)
    for v in violations[:20]:
        print(f"  ✗ {v}", file=out)
    letters = Counter((d["attributes"].get("type"), d["attributes"].get("knativeerrorcode"),
                       str(d["attributes"].get("knativeerrordest", "")).rsplit(":", 1)[-1],
                       str(d["attributes"].get("knativeerrordata", ""))[:90]) for d in dead)
    for (kind, code, dest, why), n in letters.most_common(10):
        print(f"  dead letter x{n}: {kind} → :{dest} answered {code}: {why}", file=out)
    print(json.dumps({"violations": len(violations)}), file=out, flush=True)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m localstack soak", description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("SOAK_JOBS", "200")))
    parser.add_argument("--seed", type=int, default=int(os.environ.get("SOAK_SEED", "1")))
    parser.add_argument("--chaos", default=DEFAULT_CHAOS)
    parser.add_argument("--kill-every", type=float, default=4.0)
    parser.add_argument("--timeout", type=float, default=900)
    args = parser.parse_args(argv)
    return run(args.jobs, args.seed, args.chaos, args.kill_every, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
