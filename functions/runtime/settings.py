"""Settings (SPEC §10): one object, env prefix `CREFN_`, built once per process and passed down.

`KUBECONFIG` and `K_SINK` (or their `CREFN_` names) are read here too, so the gateway and `resync` never look
at the environment for them. The rest of `functions/` reads the environment in one place, `functions.runtime.tracing`
(`OTEL_*`, `K_SERVICE`); functions-framework, gunicorn and the Kubernetes client read their own variables.
The alert sinks' URLs, the PagerDuty routing key and Alertmanager's credentials are secrets (`SecretStr`),
and a value that cannot be used fails `load_settings()` with one line naming the variable, never the value.
Every variable, and who else reads the environment: docs/operating.md#settings.

A pydantic model that reads the environment as pydantic-settings' `BaseSettings` did, without its other sources'
5.5 MiB and 50-100 ms per process (`from_environment`; docs/cost.md#what-a-process-loads).
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from functions.runtime.credentials import read_credential, visible_ascii
from functions.runtime.durations import parse_go_duration

DEFAULT_PAGERDUTY_URL = "https://events.pagerduty.com/v2/enqueue"
PREFIX = "CREFN_"


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", validate_default=True, validate_by_name=True,
                              validate_by_alias=True)

    mode: Literal["manage", "observe"] = "manage"
    manage_all: bool = False
    cre_group: str = "nvcre.nvidia.com"
    restart_grace_seconds: int = Field(default=30, ge=0)
    require_checkpoint_evidence: bool = True
    parity_settle_seconds: int = Field(default=60, ge=0)
    """Observe mode: how long a difference between CRE's verdict and the functions' must hold, nothing changed,
    before it is reported (before, it is timing: CRE may not have acted yet) (`parity`)."""
    parity_recheck_seconds: int = Field(default=120, ge=0)
    """Observe mode: how long past the settle window the tick checks again a Job made terminal (a check whose
    event was lost); a Job not terminal is checked on every tick."""
    alertmanager_url: SecretStr | None = None
    alertmanager_bearer_token: SecretStr | None = None
    alertmanager_bearer_token_file: Path | None = None
    """Read at each send (a mounted Secret or a projected token is rotated)."""
    alertmanager_username: str | None = None
    alertmanager_password: SecretStr | None = None
    alertmanager_password_file: Path | None = None
    """Read at each send, as the bearer token file."""
    alertmanager_ca_file: Path | None = None
    """PEM certificates that verify Alertmanager's TLS certificate (instead of the system's)."""
    slack_webhook_url: SecretStr | None = None
    pagerduty_routing_key: SecretStr | None = None
    pagerduty_url: SecretStr = SecretStr(DEFAULT_PAGERDUTY_URL)
    alert_sink_url: SecretStr | None = None
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    """Upper or lower case (`info`)."""
    kubeconfig: str | None = Field(
        default=None, validation_alias=AliasChoices("CREFN_KUBECONFIG", "KUBECONFIG")
    )
    k_sink: str | None = Field(default=None, validation_alias=AliasChoices("CREFN_K_SINK", "K_SINK"))
    oidc_token_path: str | None = None
    """A file holding an OIDC token (a projected ServiceAccount token for the Broker's audience), sent as
    `Authorization: Bearer` with every event posted to `K_SINK`. Read at each send: the kubelet rotates it.
    Unset: no header."""
    kube_timeout_seconds: float = Field(default=10.0, gt=0)
    client_stall_seconds: float = Field(default=10.0, gt=0)
    """How long a client connected to the served port may send nothing (or take nothing of the answer) before the
    connection is dropped: a worker serving one request at a time (`phase`) is held no longer by a client that
    stalls mid-request; a threaded one gets its thread back."""
    default_timeout_per_job: timedelta | None = None
    """A Go duration (`24h`); the bound of a Job without the annotation `crefn.dev/timeout-per-job`."""
    log_timeout_seconds: float = Field(default=30.0, gt=0)
    """How long reading a failed container's log may take in all."""
    cel_budget_seconds: float = Field(default=1.0, gt=0)
    """How long compiling and evaluating a Job's CEL expression on one input may take (node health,
    thresholds); past it the expression counts as invalid."""
    hardware_failure_action: Literal["report", "restart"] = "report"
    """On a node health failure: report it (CRE's Job tier), or also delete the TrainJob so that `restart`
    decides (what CRE's Workflow causes)."""
    alert_transition_window_seconds: int = Field(default=90, gt=0)
    """How recent a condition's `lastTransitionTime` must be for the alert a Job update derives from it to be
    announced (Slack, a PagerDuty trigger, a CloudEvent) rather than only restated to Alertmanager: one tick
    (60 s) and some delivery delay."""
    record_file: str = ""
    """The dead-letter recorder's durable JSONL file ("" for none); `cre-fn record --file` sets it, as the
    three below from `--out`, `--max-bytes` and `--keep` (`functions.runtime.deadletters`)."""
    record_out: str = "-"
    """The stream the recorder also writes each record to: `-` or `/dev/stdout` for stdout, "" for none."""
    record_max_bytes: int = Field(default=128 * 1024 * 1024, gt=0)
    """The file's cap in bytes: a line that would take it past the cap rotates it first."""
    record_keep: int = Field(default=4, ge=0)
    """Rotated files kept (`<file>.1`, the newest, to `<file>.<keep>`); the oldest past them is dropped."""
    revision: str = "unknown"
    """The git commit the image was built from: the Dockerfile bakes it in (`--build-arg CREFN_REVISION=...`);
    a build that does not say is `unknown`. Shown in `crefn_build_info` and the start-up line, not a setting to
    change."""

    def __init__(self, **values: Any) -> None:
        super().__init__(**{**from_environment(os.environ), **values})

    @field_validator("log_level", mode="before")
    @classmethod
    def _level(cls, value: object) -> object:
        return value.strip().upper() if isinstance(value, str) else value

    @field_validator("revision", mode="before")
    @classmethod
    def _revision(cls, value: object) -> object:
        return (value.strip() or "unknown") if isinstance(value, str) else value

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

    @field_validator("alertmanager_url", "slack_webhook_url", "alert_sink_url", "pagerduty_url", mode="before")
    @classmethod
    def _sink_url(cls, value: object, info: ValidationInfo) -> object:
        if (text := _text(value)) is None:
            return value
        if not text:
            return DEFAULT_PAGERDUTY_URL if info.field_name == "pagerduty_url" else None
        check_url(text)
        return text

    @field_validator("pagerduty_routing_key", mode="before")
    @classmethod
    def _routing_key(cls, value: object) -> object:
        if (text := _text(value)) is None:
            return value
        if text and not (text.isascii() and text.isalnum()):
            raise ValueError("not a PagerDuty routing key: letters and digits only")
        return text or None

    @field_validator("alertmanager_bearer_token", mode="before")
    @classmethod
    def _token(cls, value: object) -> object:
        if (text := _text(value)) is None:
            return value
        if text and not visible_ascii(text):
            raise ValueError("not a bearer token: visible ASCII only, no spaces")
        return text or None

    @field_validator("alertmanager_username", "alertmanager_password", mode="before")
    @classmethod
    def _basic(cls, value: object, info: ValidationInfo) -> object:
        if (text := _text(value)) is None:
            return value
        if not text.isprintable() or (info.field_name == "alertmanager_username" and ":" in text):
            raise ValueError("holds a character basic auth cannot carry (a control character, or `:` in the name)")
        return text or None

    @field_validator("alertmanager_bearer_token_file", "alertmanager_password_file", "alertmanager_ca_file",
                     mode="before")
    @classmethod
    def _file(cls, value: object, info: ValidationInfo) -> object:
        if not isinstance(value, str | Path) or not str(value).strip():
            return None if isinstance(value, str) else value
        path = Path(str(value).strip())
        if info.field_name != "alertmanager_ca_file":
            read_credential(path)  # a CredentialFileError is a ValueError: pydantic names the setting
            return path
        try:
            ssl.create_default_context(cafile=str(path))
        except ssl.SSLError:  # an OSError too
            raise ValueError(f"{path} holds no PEM certificate") from None
        except OSError as e:
            raise ValueError(f"{path} cannot be read ({e.strerror or type(e).__name__})") from None
        return path

    @model_validator(mode="after")
    def _alertmanager_credentials(self) -> Settings:
        check_credentials(self)
        return self

    @property
    def observe(self) -> bool:
        return self.mode == "observe"

    @property
    def alert_sinks_configured(self) -> bool:
        return any((self.alertmanager_url, self.slack_webhook_url, self.pagerduty_routing_key, self.alert_sink_url))


class InvalidSettings(ValueError):
    """Settings that cannot be used. Its text is one line naming each variable and what is wrong with it, and
    never a value: pydantic's own text quotes the input (a webhook URL, a key, a password)."""


def variables_of(name: str) -> tuple[str, ...]:
    """The variables a setting is read from, the first first (`CREFN_KUBECONFIG`, then `KUBECONFIG`)."""
    alias = Settings.model_fields[name].validation_alias
    if isinstance(alias, AliasChoices):
        return tuple(str(choice).upper() for choice in alias.choices)
    return (f"{PREFIX}{name.upper()}",)


def from_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The settings `environ` sets, by field name: of a setting's variables (in any case) the first set, as it is."""
    upper = {name.upper(): value for name, value in environ.items()}
    found = ((name, next((v for v in variables_of(name) if v in upper), None)) for name in Settings.model_fields)
    return {name: upper[variable] for name, variable in found if variable is not None}


def load_settings() -> Settings:
    """The settings from the environment; InvalidSettings when they cannot be used."""
    try:
        return Settings()
    except ValidationError as e:
        raise InvalidSettings(describe(e)) from None


def describe(error: ValidationError) -> str:
    """What a ValidationError says, without the input: `invalid settings: CREFN_X: why; CREFN_Y: why`."""
    problems = []
    for item in error.errors(include_input=False, include_url=False, include_context=False):
        why = " ".join(str(item["msg"]).removeprefix("Value error, ").split())
        name = str(item["loc"][0]) if item["loc"] else ""
        problems.append(f"{name if name.isupper() else f'CREFN_{name.upper()}'}: {why}" if name else why)
    return "invalid settings: " + "; ".join(problems)


def _text(value: object) -> str | None:
    """A setting's text, stripped of surrounding spaces and newlines (a value kept in a file or a Secret often
    ends with one); None for what is not text."""
    if isinstance(value, SecretStr):
        value = value.get_secret_value()
    return value.strip() if isinstance(value, str) else None


def check_url(url: str) -> None:
    """ValueError saying what is wrong with a sink's URL, never quoting it: its path, its query or its
    userinfo may be the secret (a Slack webhook's path, a password)."""
    if not url.isprintable() or any(c.isspace() for c in url):
        raise ValueError("not a URL: it holds spaces or control characters")
    try:
        parts = urlsplit(url)
    except ValueError:  # its text quotes the netloc (a password): say what is wrong, not what was given
        raise ValueError("not a URL: its host or userinfo holds characters that turn into `@`, `:`, `/`, `?` or "
                         "`#` once normalized (NFKC)") from None
    if "://" not in url or not parts.scheme:
        raise ValueError("not a URL: it has no scheme (it must begin with https:// or http://)")
    if parts.scheme.lower() not in ("http", "https"):
        raise ValueError("not an http or https URL")
    if not parts.hostname:
        raise ValueError("not a URL: it has no host")
    try:
        parts.port  # noqa: B018 - parsing the port is the check
    except ValueError:
        raise ValueError("not a URL: its port is not a number from 0 to 65535") from None


def check_credentials(settings: Settings) -> None:
    """ValueError when Alertmanager's credentials contradict each other or have no Alertmanager to go to."""
    prefix = "CREFN_ALERTMANAGER_"
    given = {name for name in ("BEARER_TOKEN", "BEARER_TOKEN_FILE", "USERNAME", "PASSWORD", "PASSWORD_FILE",
                               "CA_FILE") if getattr(settings, f"alertmanager_{name.lower()}") is not None}
    url = settings.alertmanager_url.get_secret_value() if settings.alertmanager_url else ""
    pairs = (("BEARER_TOKEN", "BEARER_TOKEN_FILE"), ("PASSWORD", "PASSWORD_FILE"))
    for one, other in pairs:
        if {one, other} <= given:
            raise ValueError(f"set {prefix}{one} or {prefix}{other}, not both")
    if given and not url:
        raise ValueError(f"{prefix}{sorted(given)[0]} is set but {prefix}URL is not")
    basic = {"USERNAME", "PASSWORD", "PASSWORD_FILE"} & given
    if basic and "USERNAME" not in basic:
        raise ValueError(f"{prefix}{sorted(basic)[0]} needs {prefix}USERNAME")
    if basic == {"USERNAME"}:
        raise ValueError(f"{prefix}USERNAME needs {prefix}PASSWORD or {prefix}PASSWORD_FILE")
    if basic and {"BEARER_TOKEN", "BEARER_TOKEN_FILE"} & given:
        raise ValueError("Alertmanager takes a bearer token or a username and password, not both")
    if "@" in urlsplit(url).netloc and given - {"CA_FILE"}:
        raise ValueError(f"{prefix}URL holds credentials (user:password@) and {prefix}"
                         f"{sorted(given - {'CA_FILE'})[0]} is set too: use one")
    if "CA_FILE" in given and urlsplit(url).scheme.lower() != "https":
        raise ValueError(f"{prefix}CA_FILE is set but {prefix}URL is not https")
