"""Alert sinks (SPEC §8): Alertmanager v2, Slack incoming webhook, PagerDuty Events v2 and any CloudEvents HTTP
sink, one adapter each; `notify` tries every sink that has an alert to take, even when another fails.

Facts relied on: Alertmanager takes `POST /api/v2/alerts`, a JSON array of `{labels, annotations, startsAt,
endsAt}`, and identifies an alert by its labels (a resolve is the same labels with `endsAt`). PagerDuty Events
v2 takes `{routing_key, event_action: trigger|resolve, dedup_key, payload}` and answers 202; the dedup key
`<namespace>/<job>/<alertname>` makes re-sends idempotent. A Slack incoming webhook takes `{"text",
"attachments"}` and answers 200 `ok`, or 429 with `Retry-After`. Hence a `Restated` alert goes only where a
repeat changes nothing (`meant_for`). Each sink is a `Peer` (`functions.runtime.client`): errors name the sink, never
its URL. The sinks' settings, duplicates, secrets and metrics: docs/operating.md#alerts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import SecretStr

from events.emitted import AlertData
from events.envelope import to_outbound
from events.types import EventType
from functions.domain.alerts import dedup_key
from functions.domain.alerts import meant_for as rules_meant_for
from functions.runtime.client import Peer, deliver, post_json
from functions.runtime.errors import CrefnError, PermanentError, TemporaryError, Throttled, Unavailable
from functions.runtime.metrics import count_delivery, set_alert_sinks
from functions.runtime.settings import Settings

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
    peer: Peer
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
        post_json(self.peer.at("/api/v2/alerts"), payload, TIMEOUT)


@dataclass(frozen=True)
class Slack:
    peer: Peer
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
            post_json(self.peer, payload, TIMEOUT, expect=(200,))


def slack_text(text: str) -> str:
    """Text as Slack shows it literally: `&`, `<` and `>` escaped as its API asks, so that text users
    control (a condition message, a log tail) cannot mention (`<!channel>`) or link (`<url|text>`)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


@dataclass(frozen=True)
class PagerDuty:
    peer: Peer
    routing_key: str = field(repr=False)
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
            post_json(self.peer, event, TIMEOUT, expect=(200, 202))


@dataclass(frozen=True)
class CloudEventsSink:
    peer: Peer
    name: str = "cloudevents"

    def send(self, alerts: Sequence[AlertData]) -> None:
        for a in alerts:
            out = to_outbound(EventType.ALERT, "alert", a.job.namespace, a.job.name, a, None, alertname=a.alertname,
                              alertstatus=a.status, severity=a.severity)
            deliver(self.peer, out, timeout=TIMEOUT)


def configured_sinks(settings: Settings) -> list[AlertSink]:
    sinks: list[AlertSink] = []
    if settings.alertmanager_url:
        sinks.append(Alertmanager(alertmanager_peer(settings)))
    if settings.slack_webhook_url:
        sinks.append(Slack(Peer("slack", settings.slack_webhook_url.get_secret_value())))
    if settings.pagerduty_routing_key:
        key = settings.pagerduty_routing_key.get_secret_value()
        sinks.append(PagerDuty(Peer("pagerduty", settings.pagerduty_url.get_secret_value(), secrets=(key,)), key))
    if settings.alert_sink_url:
        sinks.append(CloudEventsSink(Peer("cloudevents", settings.alert_sink_url.get_secret_value())))
    return sinks


def alertmanager_peer(settings: Settings) -> Peer:
    """Alertmanager with its credentials: a bearer token, or a username and password (or the user and
    password of its URL), and the CA verifying its certificate."""
    s = settings
    return Peer("alertmanager", _text(s.alertmanager_url), bearer_token=_text(s.alertmanager_bearer_token),
                bearer_token_file=_text(s.alertmanager_bearer_token_file), username=s.alertmanager_username or "",
                password=_text(s.alertmanager_password), password_file=_text(s.alertmanager_password_file),
                ca_file=_text(s.alertmanager_ca_file))


def _text(value: SecretStr | Path | None) -> str:
    """A setting as a `Peer` takes it: a secret's text, a path, or "" when unset."""
    return "" if value is None else value.get_secret_value() if isinstance(value, SecretStr) else str(value)


def start(function: str, settings: Settings) -> None:
    """What the alert function shows once its settings are read: how many sinks it has (0: its alerts reach
    no one)."""
    set_alert_sinks(function, len(configured_sinks(settings)))


def meant_for(sink: AlertSink, alerts: Sequence[AlertData]) -> list[AlertData]:
    """The alerts a sink is sent (`functions.domain.alerts.meant_for`, by the sink's name)."""
    return rules_meant_for(sink.name, alerts)


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
