"""`python -m localstack dev --replay FILE`: reproduce a recorded event log in a fresh stack. Each recorded Job is
created again, the Trainer simulator repeats what the recording shows the Trainer (and users) did to
its TrainJobs, and the final Job status is compared with the recorded one."""

from __future__ import annotations

import json
from typing import Any

from localstack.scenarios.demo import create_job, drive, final_state, summary
from localstack.stack import Stack
from localstack.timeline import Timeline
from localstack.trainer import script_from_recording


def jobs_in_recording(records: list[dict[str, Any]]) -> dict[tuple[str, str], tuple[dict[str, Any], dict[str, Any]]]:
    """(namespace, name) → (first and last recorded state) of every CRE Job in a recording."""
    found: dict[tuple[str, str], tuple[dict[str, Any], dict[str, Any]]] = {}
    for r in records:
        attrs = r["attributes"]
        if attrs.get("kind") == "Job" and str(attrs.get("type", "")).startswith("dev.knative.apiserver.resource"):
            key = (attrs["namespace"], attrs["name"])
            first = found.get(key, (r["data"], r["data"]))[0]
            found[key] = (first, r["data"])
    return found


def restore_job(recorded: dict[str, Any]) -> dict[str, Any]:
    meta = recorded["metadata"]
    keep = {k: v for k, v in (meta.get("annotations") or {}).items() if not k.startswith("crefn.dev/")}
    return {"apiVersion": recorded["apiVersion"], "kind": "Job",
            "metadata": {"name": meta["name"], "labels": meta.get("labels") or {}, "annotations": keep},
            "spec": recorded["spec"]}


def reproduce(stack: Stack, records: list[dict[str, Any]], timeline: Timeline, timeout: float,
              into: str | None = None) -> int:
    """Re-create each recorded Job (in `into` when given), let the Trainer repeat what the recording
    shows it did, and compare the final Job status with the recorded one."""
    jobs = jobs_in_recording(records)
    if not jobs:
        print("the recording holds no CRE Job events: nothing to reproduce", file=timeline.out)
        return 1
    failures = 0
    for (recorded_ns, name), (first, last) in jobs.items():
        namespace = into or recorded_ns
        restarted = any(r["attributes"].get("type") == "dev.crefn.job.restarted" and r["attributes"].get("job") == name
                        for r in records)
        script = script_from_recording(records, name, stack.group)
        timeline.say(f"replay: Job {namespace}/{name}, Trainer script {json.dumps(script)}")
        create_job(stack.gateway, namespace, restore_job(first), evidence=restarted, group=stack.group)
        drive(stack, namespace, {name: script}, timeline, timeout, measured_within=0.0)  # the recording's pace
        got = summary(stack, namespace, name, timeline)
        want = final_state(last)
        same = got == want
        failures += not same
        print(f"\nreplay of {namespace}/{name}: recorded {want}, reproduced {got}: {'same' if same else 'DIFFERENT'}",
              file=timeline.out)
    return 1 if failures else 0
