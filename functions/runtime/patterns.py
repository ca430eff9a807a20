"""Tenants' regular expressions as Go's `regexp` reads them: RE2 (google-re2, the only owner of that binding), so a
LogProfile's pattern means here what it means to CRE — ASCII `\\d`, `\\s` and `\\w`, no backreference or lookaround,
leftmost-first matches — and runs in time linear in the line, whatever a tenant writes: no pattern can stall a
function. A pattern RE2 refuses raises `BadPattern` with Go's words (`error parsing regexp: <code>: `<text>``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import re2  # type: ignore[import-untyped]

MAX_PROGRAM = 8 << 20
"""The compiled program's memory budget, RE2's own default (8 MiB): a pattern past it is refused, not run."""


class BadPattern(ValueError):
    """A pattern RE2 does not compile, said as Go's `regexp.Compile` says it."""


@dataclass(frozen=True)
class Pattern:
    """A compiled pattern: `search(line)` → its named groups (a group that did not take part: absent), or None."""

    text: str
    compiled: Any

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self.compiled.groupindex)

    def search(self, line: str) -> Mapping[str, str] | None:
        found = self.compiled.search(line)
        if found is None:
            return None
        return {name: value for name, value in found.groupdict().items() if value is not None}


def compile_go(text: str) -> Pattern:
    """The pattern compiled with Go's semantics; BadPattern with Go's message when RE2 refuses it."""
    options = re2.Options()
    options.log_errors = False
    options.max_mem = MAX_PROGRAM
    try:
        return Pattern(text, re2.compile(text, options))
    except re2.error as e:
        raise BadPattern(go_message(e)) from None


def go_message(error: Exception) -> str:
    """RE2's `<code>: <text>` as Go's `error parsing regexp: <code>: `<text>``."""
    said = error.args[0] if error.args else str(error)
    said = said.decode(errors="replace") if isinstance(said, bytes) else str(said)
    code, _, text = said.partition(": ")
    return f"error parsing regexp: {code}: `{text}`" if text else f"error parsing regexp: {code}"
