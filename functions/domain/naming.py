"""Names of the objects made for a Job, as CRE's `pkg/naming` makes them. Pure.

`truncate(name, limit)` is CRE's `naming.Truncate`: a name that fits is kept; a longer one keeps its first
`limit - 6` characters (at least 1), drops their trailing `-`, and ends in `-` and the first 5 characters
of the FNV-32a hash of the whole name printed as Go's `%05x` does — padded to 5 digits only, so for any
hash of 0x10000 or more they are its leading hex digits (`fmt.Sprintf("%05x", h)[:5]`). The TrainJob
(`<job>-workload`, 44) and the measurements (`<job>-goodput`, `<job>-bandwidth`, 63) are named by it.
"""

from __future__ import annotations

HASH_DIGITS = 5


def fnv32a(text: str) -> int:
    h = 0x811C9DC5
    for byte in text.encode():
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def truncate(name: str, limit: int) -> str:
    if len(name) <= limit:
        return name
    prefix = name[:max(limit - HASH_DIGITS - 1, 1)].rstrip("-")
    return f"{prefix}-{f'{fnv32a(name):05x}'[:HASH_DIGITS]}"
