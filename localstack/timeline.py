"""The local stack's live timeline: one readable line per delivery (event → function → answer), one
per change of a Job's True condition, and Alertmanager's notifications."""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, TextIO

from functions.domain.conditions import true_exclusive
from localstack.eventing.broker import DeliveryAttempt


@dataclass
class Timeline:
    """Readable live lines: event → function → answer, and every change of a Job's True condition."""

    out: TextIO = sys.stdout
    started: float = field(default_factory=time.monotonic)
    conditions: dict[str, tuple[str, str, int]] = field(default_factory=dict)
    blocked: dict[str, str] = field(default_factory=dict)
    """Job → its `schedulingBlockedSince` as last seen ("" when unset)."""
    notified: dict[tuple[str, str, str], str] = field(default_factory=dict)
    """(namespace, job, alertname) → the last status Alertmanager notified."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def say(self, text: str) -> None:
        with self.lock:
            print(f"{time.monotonic() - self.started:7.2f}s  {text}", file=self.out, flush=True)

    def outcome(self, o: DeliveryAttempt) -> None:
        attrs = o.record["attributes"]
        what = describe(o.record)
        answer = f"{o.status}"
        if o.reply is not None:
            answer += f" → {short_type(o.reply['attributes']['type'])}{reply_detail(o.reply)}"
        elif o.text:
            answer += f" ({o.text[:90]})"
        retry = f" [retry {o.attempt}]" if o.attempt else ""
        self.say(f"{short_type(attrs['type']):<22} {what:<44} → {o.trigger.removeprefix('crefn-'):<22} {answer}{retry}")

    def published(self, record: dict[str, Any]) -> None:
        attrs = record["attributes"]
        if attrs.get("kind") != "Job" or not str(attrs.get("type", "")).startswith("dev.knative.apiserver"):
            return
        obj = record["data"]
        status = obj.get("status") or {}
        cond = true_exclusive(status.get("conditions") or [])
        if cond is None:
            return
        key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
        now = (cond.type, cond.reason, int(status.get("restartCount", 0)))
        with self.lock:
            changed = self.conditions.get(key) != now
            self.conditions[key] = now
        if changed:
            self.say(f"== Job {key}: {cond.type}/{cond.reason} (restarts {now[2]}): {cond.message}")
        since = str(status.get("schedulingBlockedSince") or "")
        with self.lock:
            before = self.blocked.get(key, "")
            self.blocked[key] = since
        if since and not before:
            self.say(f"== Job {key}: pods unschedulable since {since}: clocks paused")
        elif before and not since:
            self.say(f"== Job {key}: pods scheduled again at {status.get('schedulingResumedTime')}; "
                     f"workloadStartTime now {status.get('workloadStartTime')}")


def short_type(t: str) -> str:
    return t.removeprefix("dev.knative.apiserver.").removeprefix("dev.crefn.").removeprefix("dev.knative.sources.")


def describe(record: dict[str, Any]) -> str:
    attrs, data = record["attributes"], record.get("data") or {}
    if attrs.get("kind") and isinstance(data, dict) and "metadata" in data:
        attempt = (data["metadata"].get("labels") or {}).get("crefn.dev/attempt")
        suffix = f" #{attempt}" if attempt is not None and attrs["kind"] == "TrainJob" else ""
        return f"{attrs['kind']} {attrs.get('namespace')}/{attrs.get('name')}{suffix}"
    return str(attrs.get("subject") or attrs.get("source", ""))


def reply_detail(reply: dict[str, Any]) -> str:
    attrs, data = reply["attributes"], reply.get("data") or {}
    if "workloadphase" in attrs:
        return f" {attrs['workloadphase']}" + (f"/{data['reason']}" if data.get("reason") else "")
    if "jobcondition" in attrs:
        return f" {attrs['jobcondition']}/{(data.get('new') or {}).get('reason', '')}"
    if attrs["type"].endswith("job.restarted"):
        return f" attempt {data.get('attempt')}/{data.get('maxRestarts')}"
    if attrs["type"].endswith("workload.created"):
        return f" attempt {data.get('attempt')}" + (" (adopted)" if data.get("adopted") else "")
    return ""
