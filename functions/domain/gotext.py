"""Go's texts, as CRE's messages print them: a duration (`time.Duration.String()`), a list (`%v` of a slice) and a
quoted string (`%q`). Pure."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta


def go_duration(d: timedelta) -> str:
    """Go's `time.Duration.String()`: `5m0s`, `1h0m0s`, `1m30s`, `1.5s`, `300ms`, `0s`."""
    ns = ((d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds) * 1000
    if ns == 0:
        return "0s"
    sign, ns = ("-" if ns < 0 else ""), abs(ns)
    if ns < 1_000_000_000:
        unit, scale = ("ns", 1) if ns < 1000 else ("µs", 1000) if ns < 1_000_000 else ("ms", 1_000_000)
        return f"{sign}{_fraction(ns, scale)}{unit}"
    hours, rest = divmod(ns, 3600 * 1_000_000_000)
    minutes, rest = divmod(rest, 60 * 1_000_000_000)
    seconds = f"{_fraction(rest, 1_000_000_000)}s"
    if hours:
        return f"{sign}{hours}h{minutes}m{seconds}"
    return f"{sign}{minutes}m{seconds}" if minutes else f"{sign}{seconds}"


def go_list(items: Sequence[str]) -> str:
    """Go's `%v` of a `[]string`: `[a b]`."""
    return f"[{' '.join(items)}]"


def go_quote(text: str) -> str:
    """Go's `%q` of a string (printable characters kept, the others escaped)."""
    escapes = {'"': '\\"', "\\": "\\\\", "\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
               "\t": "\\t", "\v": "\\v"}
    out = []
    for ch in text:
        if ch in escapes:
            out.append(escapes[ch])
        elif ch.isprintable() or ch == " ":
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


def _fraction(value: int, scale: int) -> str:
    whole, part = divmod(value, scale)
    if not part:
        return str(whole)
    return f"{whole}.{str(part).zfill(len(str(scale)) - 1).rstrip('0')}"
