"""Credential files: an OIDC token, an Alertmanager bearer token or password, read when it is used.

A projected token or a mounted Secret is rotated in place, so every use reads the file again. A
credential is one line of visible ASCII (what an HTTP header's token may hold); errors name the file
and never show what it holds.
"""

from __future__ import annotations

from pathlib import Path


class CredentialFileError(ValueError):
    """A credential file that cannot be read or holds no credential; the text names the file only."""


def visible_ascii(text: str) -> bool:
    """Whether `text` is non-empty visible ASCII (what a header's token may hold)."""
    return bool(text) and all("!" <= c <= "~" for c in text)


def read_credential(path: str | Path) -> str:
    """The credential in `path`, read now, surrounding spaces and newlines stripped."""
    try:
        raw = Path(path).read_bytes()
    except OSError as e:
        raise CredentialFileError(f"{path} cannot be read ({e.strerror or type(e).__name__})") from None
    text = raw.decode("latin-1").strip()
    if not visible_ascii(text):
        raise CredentialFileError(f"{path} holds no credential (one line of visible ASCII, got {len(raw)} bytes)")
    return text
