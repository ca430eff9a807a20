"""Alert sinks (SPEC §8): Alertmanager v2, Slack incoming webhook, PagerDuty Events v2, and any
CloudEvents HTTP sink. One adapter each; all of them are tried for every batch of alerts.

Facts relied on: Alertmanager takes `POST /api/v2/alerts` with a JSON array of `{labels, annotations,
startsAt, endsAt}` and identifies an alert by its labels; a resolve is the same labels with `endsAt`
now. PagerDuty Events v2 takes `{routing_key, event_action: trigger|resolve, dedup_key, payload}` and
answers 202; the dedup key `<namespace>/<job>/<alertname>` makes re-sends idempotent. Slack incoming
webhooks take `{"text", "attachments"}` and answer 200 `ok`, or 429 with `Retry-After` when throttled.
Duplicates: a redelivered event re-sends every alert; Alertmanager (labels) and PagerDuty (dedup
key) absorb them, Slack shows the message again and the CloudEvents sink receives it again. A
`Restated` alert (a Job update repeating a state) goes only where a repeat changes nothing (`meant_for`).
Each batch sent to a sink is counted (`crefn_alert_deliveries_total`) by the sink's name and its
result: delivered, refused, unavailable or throttled.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from events.emitted import AlertData
from events.envelope import to_outbound
from events.types import EventType
from functions.errors import CrefnError, PermanentError, TemporaryError, Throttled, Unavailable
from functions.metrics import count_delivery
from functions.rules.alerting import Restated, dedup_key
from functions.settings import Settings
from functions.transport import deliver, post_json

TIMEOUT = 10.0


class AlertSink(Protocol):
    @property
    def name(self) -> str: ...

    def send(self, alerts: Sequence[AlertData]) -> None:
        """Deliver the alerts; `TemporaryError` when worth a retry, `PermanentError` when refused."""


def iso(alert_time: Any) -> str:
    return str(alert_time.strftime("%Y-%m-%dT%H:%M:%SZ"))


@dataclass(frozen=True)
class Alertmanager:
    url: str
    name: str = "alertmanager"

    def send(self, alerts: Sequence[AlertData]) -> None:
        payload = []
        for a in alerts:
            item: dict[str, Any] = {"labels": a.labels,
                                    "annotations": {"summary": a.summary, "description": a.description},
                                    "startsAt": iso(a.starts_at),
                                    "generatorURL": f"crefn://jobs/{a.job.namespace}/{a.job.name}"}
            if a.ends_at is not None:
                item["endsAt"] = iso(a.ends_at)
            payload.append(item)
        post_json(self.url.rstrip("/") + "/api/v2/alerts", payload, self.name, TIMEOUT)


@dataclass(frozen=True)
class Slack:
    url: str
    name: str = "slack"

    def send(self, alerts: Sequence[AlertData]) -> None:
        for a in alerts:
            resolved = a.status == "resolved"
            color = "good" if resolved else ("danger" if a.severity == "critical" else "warning")
            title = f"{'RESOLVED' if resolved else a.severity.upper()}: {a.summary}"
            payload = {"text": slack_text(title), "attachments": [{
                "color": color, "title": slack_text(a.alertname), "text": slack_text(a.description), "fields": [
                    {"title": "namespace", "value": slack_text(a.job.namespace), "short": True},
                    {"title": "job", "value": slack_text(a.job.name), "short": True},
                    {"title": "reason", "value": slack_text(a.reason), "short": True},
                    {"title": "severity", "value": slack_text(a.severity), "short": True}]}]}
            post_json(self.url, payload, self.name, TIMEOUT, expect=(200,))


def slack_text(text: str) -> str:
    """Text as Slack shows it literally: `&`, `<` and `>` escaped as its API asks, so that text users
    control (a condition message, a log tail) cannot mention (`<!channel>`) or link (`<url|text>`)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


@dataclass(frozen=True)
class PagerDuty:
    url: str
    routing_key: str
    name: str = "pagerduty"

    def send(self, alerts: Sequence[AlertData]) -> None:
        for a in alerts:
            event: dict[str, Any] = {"routing_key": self.routing_key, "dedup_key": dedup_key(a),
                                     "event_action": "resolve" if a.status == "resolved" else "trigger"}
            if a.status == "firing":
                event["payload"] = {"summary": a.summary[:1024], "source": f"{a.job.namespace}/{a.job.name}",
                                    "severity": a.severity, "timestamp": iso(a.starts_at), "component": a.job.name,
                                    "group": a.job.namespace, "class": a.alertname,
                                    "custom_details": {"description": a.description, "reason": a.reason}}
            post_json(self.url, event, self.name, TIMEOUT, expect=(200, 202))


@dataclass(frozen=True)
class CloudEventsSink:
    url: str
    name: str = "cloudevents"

    def send(self, alerts: Sequence[AlertData]) -> None:
        for a in alerts:
            out = to_outbound(EventType.ALERT, "alert", a.job.namespace, a.job.name, a, None, alertname=a.alertname,
                              alertstatus=a.status, severity=a.severity)
            deliver(self.url, out, self.name, TIMEOUT)


def configured_sinks(settings: Settings) -> list[AlertSink]:
    sinks: list[AlertSink] = []
    if settings.alertmanager_url:
        sinks.append(Alertmanager(settings.alertmanager_url))
    if settings.slack_webhook_url:
        sinks.append(Slack(settings.slack_webhook_url))
    if settings.pagerduty_routing_key:
        sinks.append(PagerDuty(settings.pagerduty_url, settings.pagerduty_routing_key))
    if settings.alert_sink_url:
        sinks.append(CloudEventsSink(settings.alert_sink_url))
    return sinks


def meant_for(sink: AlertSink, alerts: Sequence[AlertData]) -> list[AlertData]:
    """The alerts a sink is sent: all but the `Restated` ones, which only Alertmanager takes (the same labels
    again change nothing) and PagerDuty when they resolve (a trigger re-sent after its incident was resolved
    opens a new one; Slack and a CloudEvents sink show every message)."""
    if isinstance(sink, Alertmanager):
        return list(alerts)
    resolves = isinstance(sink, PagerDuty)
    return [a for a in alerts if not isinstance(a, Restated) or (resolves and a.status == "resolved")]


def notify(sinks: Sequence[AlertSink], alerts: Sequence[AlertData]) -> str:
    """Send to every sink, even when one fails: `TemporaryError` (503) when any is worth a retry,
    naming those that got the alerts; `PermanentError` when a sink refused them; else a summary."""
    failures: list[tuple[AlertSink, CrefnError]] = []
    served = [(sink, batch) for sink in sinks if (batch := meant_for(sink, alerts))]
    for sink, batch in served:
        try:
            sink.send(batch)
        except (TemporaryError, PermanentError) as e:
            failures.append((sink, e))
            count_delivery(sink.name, delivery_result(e))
        else:
            count_delivery(sink.name, "delivered")
    names = ", ".join(f"{a.alertname} {a.status}" for a in alerts)
    text = "; ".join(str(e) for _, e in failures)
    if any(isinstance(e, TemporaryError) for _, e in failures):
        raise Unavailable(f"alert sinks failed: {text} (delivered to the others: {names})")
    if failures:
        raise PermanentError(f"alert sinks refused: {text}")
    return f"sent to {len(served)} sinks: {names}"


def delivery_result(error: CrefnError) -> str:
    """The `result` of a delivery that failed: throttled (429), unavailable (down, unreachable, 5xx) or
    refused (any other answer: the payload will never be taken)."""
    if isinstance(error, Throttled):
        return "throttled"
    return "unavailable" if isinstance(error, TemporaryError) else "refused"
