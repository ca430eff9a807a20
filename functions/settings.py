"""Settings (SPEC §10): one object, env prefix `CREFN_`, built once per process and passed down.

Nothing else in `functions/` reads the environment. `KUBECONFIG` is read here too (as `kubeconfig`),
so the gateway never looks at the environment for it.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from functions.durations import parse_go_duration

DEFAULT_PAGERDUTY_URL = "https://events.pagerduty.com/v2/enqueue"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CREFN_", frozen=True, extra="ignore")

    mode: Literal["manage", "observe"] = "manage"
    manage_all: bool = False
    cre_group: str = "nvcre.nvidia.com"
    restart_grace_seconds: int = Field(default=30, ge=0)
    require_checkpoint_evidence: bool = True
    alertmanager_url: str | None = None
    slack_webhook_url: str | None = None
    pagerduty_routing_key: str | None = None
    pagerduty_url: str = DEFAULT_PAGERDUTY_URL
    alert_sink_url: str | None = None
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    kubeconfig: str | None = Field(
        default=None, validation_alias=AliasChoices("CREFN_KUBECONFIG", "KUBECONFIG")
    )
    k_sink: str | None = Field(default=None, validation_alias=AliasChoices("CREFN_K_SINK", "K_SINK"))
    oidc_token_path: str | None = None
    """A file holding an OIDC token (a projected ServiceAccount token for the Broker's audience), sent as
    `Authorization: Bearer` with every event posted to `K_SINK`. Read at each send: the kubelet rotates it.
    Unset: no header."""
    kube_timeout_seconds: float = Field(default=10.0, gt=0)
    default_timeout_per_job: timedelta | None = None
    """A Go duration (`24h`); the bound of a Job without the annotation `crefn.dev/timeout-per-job`."""
    log_timeout_seconds: float = Field(default=30.0, gt=0)
    """How long reading a failed container's log may take in all."""
    hardware_failure_action: Literal["report", "restart"] = "report"
    """On a node health failure: report it (CRE's Job tier), or also delete the TrainJob so that `restart`
    decides (what CRE's Workflow causes)."""
    alert_transition_window_seconds: int = Field(default=90, gt=0)
    """How recent a condition's `lastTransitionTime` must be for the alert a Job update derives from it to be
    announced (Slack, a PagerDuty trigger, a CloudEvent) rather than only restated to Alertmanager: one tick
    (60 s) and some delivery delay."""
    record_file: str = ""
    """The dead-letter recorder's durable JSONL file ("" for none); `cre-fn record --file` sets it, as the
    three below from `--out`, `--max-bytes` and `--keep` (`functions.deadletters`)."""
    record_out: str = "-"
    """The stream the recorder also writes each record to: `-` or `/dev/stdout` for stdout, "" for none."""
    record_max_bytes: int = Field(default=128 * 1024 * 1024, gt=0)
    """The file's cap in bytes: a line that would take it past the cap rotates it first."""
    record_keep: int = Field(default=4, ge=0)
    """Rotated files kept (`<file>.1`, the newest, to `<file>.<keep>`); the oldest past them is dropped."""

    @field_validator("default_timeout_per_job", mode="before")
    @classmethod
    def _go_duration(cls, value: object) -> object:
        if isinstance(value, str):
            if not value.strip():
                return None
            duration = parse_go_duration(value)
            if duration <= timedelta(0):
                raise ValueError(f"not a positive duration: {value!r}")
            return duration
        return value

    @property
    def observe(self) -> bool:
        return self.mode == "observe"

    @property
    def alert_sinks_configured(self) -> bool:
        return any((self.alertmanager_url, self.slack_webhook_url, self.pagerduty_routing_key, self.alert_sink_url))
