"""Alert sinks (SPEC §8): Alertmanager v2, Slack incoming webhook, PagerDuty Events v2, and any
CloudEvents HTTP sink. One adapter each; all of them are tried for every batch of alerts.

Facts relied on: Alertmanager takes `POST /api/v2/alerts` with a JSON array of `{labels, annotations,
startsAt, endsAt}` and identifies an alert by its labels; a resolve is the same labels with `endsAt`
now. PagerDuty Events v2 takes `{routing_key, event_action: trigger|resolve, dedup_key, payload}` and
answers 202; the dedup key `<namespace>/<job>/<alertname>` makes re-sends idempotent. Slack incoming
webhooks take `{"text", "attachments"}` and answer 200 `ok`, or 429 with `Retry-After` when throttled.
Duplicates: a redelivered event re-sends every alert; Alertmanager (labels) and PagerDuty (dedup
key) absorb them, Slack shows the message again and the CloudEvents sink receives it again.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from events.emitted import AlertData, JobRef
from events.envelope import to_outbound
from events.types import EventType
from functions.alerts import Alert
from functions.errors import TemporaryError
from functions.settings import Settings
from functions.transport import send_event

TIMEOUT = 10.0


class SinkError(Exception):
    """A sink did not take the alerts. `temporary`: down, throttled or 5xx (worth a retry)."""

    def __init__(self, sink: str, message: str, temporary: bool = True) -> None:
        super().__init__(f"{sink}: {message}")
        self.temporary = temporary


class Sink(Protocol):
    @property
    def name(self) -> str: ...

    def send(self, alerts: Sequence[Alert]) -> None: ...


def iso(alert_time: Any) -> str:
    return str(alert_time.strftime("%Y-%m-%dT%H:%M:%SZ"))


def post_json(sink: str, url: str, payload: Any, expect: Sequence[int] = (200, 201, 202, 204)) -> None:
    request = urllib.request.Request(url, data=json.dumps(payload).encode(), method="POST",
                                     headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as resp:
            if resp.status not in expect:
                raise SinkError(sink, f"answered {resp.status}")
    except urllib.error.HTTPError as e:
        with e:
            body = " ".join(e.read().decode(errors="replace").split())[:200]
            if e.code == 429:
                after = e.headers.get("Retry-After")
                raise SinkError(sink, f"throttled (429{f', retry after {after}s' if after else ''})") from e
            raise SinkError(sink, f"answered {e.code}: {body}", temporary=e.code >= 500) from e
    except (urllib.error.URLError, OSError) as e:
        raise SinkError(sink, f"unreachable ({getattr(e, 'reason', e)})") from e


@dataclass(frozen=True)
class Alertmanager:
    url: str
    name: str = "alertmanager"

    def send(self, alerts: Sequence[Alert]) -> None:
        payload = []
        for a in alerts:
            item: dict[str, Any] = {"labels": a.labels,
                                    "annotations": {"summary": a.summary, "description": a.description},
                                    "startsAt": iso(a.starts_at), "generatorURL": f"crefn://jobs/{a.namespace}/{a.job}"}
            if a.ends_at is not None:
                item["endsAt"] = iso(a.ends_at)
            payload.append(item)
        post_json(self.name, self.url.rstrip("/") + "/api/v2/alerts", payload)


@dataclass(frozen=True)
class Slack:
    url: str
    name: str = "slack"

    def send(self, alerts: Sequence[Alert]) -> None:
        for a in alerts:
            resolved = a.status == "resolved"
            color = "good" if resolved else ("danger" if a.severity == "critical" else "warning")
            title = f"{'RESOLVED' if resolved else a.severity.upper()}: {a.summary}"
            payload = {"text": title, "attachments": [{
                "color": color, "title": a.name, "text": a.description, "fields": [
                    {"title": "namespace", "value": a.namespace, "short": True},
                    {"title": "job", "value": a.job, "short": True},
                    {"title": "reason", "value": a.reason, "short": True},
                    {"title": "severity", "value": a.severity, "short": True}]}]}
            post_json(self.name, self.url, payload, expect=(200,))


@dataclass(frozen=True)
class PagerDuty:
    url: str
    routing_key: str
    name: str = "pagerduty"

    def send(self, alerts: Sequence[Alert]) -> None:
        for a in alerts:
            event: dict[str, Any] = {"routing_key": self.routing_key, "dedup_key": a.dedup_key,
                                     "event_action": "resolve" if a.status == "resolved" else "trigger"}
            if a.status == "firing":
                event["payload"] = {"summary": a.summary[:1024], "source": f"{a.namespace}/{a.job}",
                                    "severity": a.severity, "timestamp": iso(a.starts_at), "component": a.job,
                                    "group": a.namespace, "class": a.name,
                                    "custom_details": {"description": a.description, "reason": a.reason}}
            post_json(self.name, self.url, event, expect=(200, 202))


@dataclass(frozen=True)
class CloudEventsSink:
    url: str
    name: str = "cloudevents"

    def send(self, alerts: Sequence[Alert]) -> None:
        for a in alerts:
            data = AlertData(alertname=a.name, status=a.status, severity=a.severity,
                             job=JobRef(name=a.job, namespace=a.namespace), reason=a.reason, summary=a.summary,
                             description=a.description, starts_at=a.starts_at, ends_at=a.ends_at, labels=a.labels)
            out = to_outbound(EventType.ALERT, "alert", a.namespace, a.job, data, None, alertname=a.name,
                              alertstatus=a.status, severity=a.severity)
            try:
                send_event(self.url, out, timeout=TIMEOUT)
            except TemporaryError as e:
                raise SinkError(self.name, str(e)) from e


def configured_sinks(settings: Settings) -> list[Sink]:
    sinks: list[Sink] = []
    if settings.alertmanager_url:
        sinks.append(Alertmanager(settings.alertmanager_url))
    if settings.slack_webhook_url:
        sinks.append(Slack(settings.slack_webhook_url))
    if settings.pagerduty_routing_key:
        sinks.append(PagerDuty(settings.pagerduty_url, settings.pagerduty_routing_key))
    if settings.alert_sink_url:
        sinks.append(CloudEventsSink(settings.alert_sink_url))
    return sinks
