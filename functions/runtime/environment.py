"""The settings as the environment names them: every variable the settings read, the `CREFN_` variables none
reads (a typo, or a setting of another release, with the name it is closest to), and the effective settings by
variable name as a log line may show them (a secret `[redacted]`, a URL without its credentials)."""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pydantic import SecretStr

from functions.runtime.settings import PREFIX, Settings, variables_of

REDACTED = "[redacted]"


def variable_names() -> frozenset[str]:
    """Every variable the settings read, upper case (`CREFN_MODE`, and `KUBECONFIG`, `K_SINK`)."""
    return frozenset(variable for name in Settings.model_fields for variable in variables_of(name))


def unknown_variables(environ: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """Each `CREFN_*` variable of `environ` (the process's) that no setting reads (a typo, or a setting of another
    release), with the known name it is closest to ("" when none is close), sorted."""
    environ = os.environ if environ is None else environ
    known = variable_names()
    unknown = sorted(name for name in environ if name.upper().startswith(PREFIX) and name.upper() not in known)
    return [(name, next(iter(difflib.get_close_matches(name.upper(), known, n=1, cutoff=0.8)), ""))
            for name in unknown]


def shown(settings: Settings) -> dict[str, Any]:
    """The effective settings by variable name, as a log line may show them: a secret that is set is
    `[redacted]`, whatever it holds; a duration in seconds; a path as text."""
    out: dict[str, Any] = {}
    for name in Settings.model_fields:
        value = getattr(settings, name)
        if isinstance(value, SecretStr):
            value = REDACTED
        elif isinstance(value, timedelta):
            value = value.total_seconds()
        elif isinstance(value, Path):
            value = str(value)
        elif name == "k_sink" and value:
            value = without_credentials(value)
        out[f"{PREFIX}{name.upper()}"] = value
    return out


def without_credentials(url: str) -> str:
    """A URL as it may be shown: its userinfo and its query, which may hold credentials, redacted."""
    try:
        parts = urlsplit(url)
        host = parts.netloc.rpartition("@")[2]
    except ValueError:
        return REDACTED
    netloc = f"{REDACTED}@{host}" if "@" in parts.netloc else host
    return urlunsplit(parts._replace(netloc=netloc, query=REDACTED if parts.query else "", fragment=""))
