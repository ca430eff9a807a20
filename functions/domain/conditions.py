"""CRE's condition rules (SPEC §6.2), for Jobs and the WorkloadRuns that mirror them.

`InProgress`, `Succeeded` and `Failed` are exclusive: the chosen one is True with its reason and
message, the other two False with reason `NotApplicable` (a WorkloadRun: `Superseded`) and an empty
message. Every exclusive condition carries `observedGeneration`; `lastTransitionTime` changes only
when the status flips. Other conditions (`HardwareFailed`, `ValidationFailed`, ...) are kept exactly
as they are. The chosen condition is one value, `ConditionSummary` (type, reason, message), carried
from the decision to the write and into `job.condition.changed`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from events.emitted import ConditionSummary
from events.types import Reason

ExclusiveType = Literal["InProgress", "Succeeded", "Failed"]
EXCLUSIVE: tuple[ExclusiveType, ...] = ("InProgress", "Succeeded", "Failed")
TERMINAL = ("Succeeded", "Failed")
PRECEDENCE: tuple[ExclusiveType, ...] = ("Failed", "Succeeded", "InProgress")
_COMPARED = ("status", "reason", "message", "observedGeneration")


def rfc3339(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(value: str) -> datetime | None:
    """A Kubernetes timestamp (`...Z` or with an offset); None when empty or unreadable."""
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None
    except ValueError:
        return None


def condition(type_: ExclusiveType, reason: str, message: str) -> ConditionSummary:
    return ConditionSummary(type=type_, reason=reason, message=message)


def true_exclusive(conditions: Sequence[dict[str, Any]]) -> ConditionSummary | None:
    """The True exclusive condition, if any; of several (CRE wrote `InProgress` and `Failed` True on a
    timeout before its ADR-086), Failed, then Succeeded, then InProgress, as CRE reads them."""
    true = {c.get("type"): c for c in conditions if c.get("status") == "True"}
    for cond_type in PRECEDENCE:
        if cond := true.get(cond_type):
            return ConditionSummary(type=cond_type, reason=cond.get("reason", ""), message=cond.get("message", ""))
    return None


def is_terminal(conditions: Sequence[dict[str, Any]]) -> bool:
    return any(c.get("type") in TERMINAL and c.get("status") == "True" for c in conditions)


def changes_condition(before: ConditionSummary | None, after: ConditionSummary) -> bool:
    """Whether the True exclusive type or its reason changes (what `job.condition.changed` means)."""
    return before is None or (before.type, before.reason) != (after.type, after.reason)


def decide_conditions(
    current: Sequence[dict[str, Any]],
    generation: int,
    chosen: ConditionSummary,
    now: datetime,
    sibling_reason: str = Reason.NOT_APPLICABLE,
) -> list[dict[str, Any]] | None:
    """The full new conditions list, or None when nothing would change."""
    by_type = {c.get("type"): c for c in current}
    desired: list[dict[str, Any]] = []
    changed = False
    for cond_type in EXCLUSIVE:
        is_chosen = cond_type == chosen.type
        want = {
            "type": cond_type,
            "status": "True" if is_chosen else "False",
            "reason": chosen.reason if is_chosen else str(sibling_reason),
            "message": chosen.message if is_chosen else "",
            "observedGeneration": generation,
        }
        have = by_type.get(cond_type) or {}
        flipped = have.get("status") != want["status"]
        want["lastTransitionTime"] = (have.get("lastTransitionTime") if not flipped else None) or rfc3339(now)
        changed |= any(have.get(k, "" if k != "observedGeneration" else None) != want[k] for k in _COMPARED)
        desired.append(want)
    if not changed:
        return None
    others = [c for c in current if c.get("type") not in EXCLUSIVE]
    return others + desired


def decide_independent(current: Sequence[dict[str, Any]], generation: int, cond_type: str, status: bool,
                       reason: str, message: str, now: datetime) -> list[dict[str, Any]] | None:
    """The conditions list with an independent condition (`HardwareFailed`, `ValidationFailed`) set, the
    exclusive set and every other condition kept as they are; None when nothing would change.
    `lastTransitionTime` changes only when the status flips."""
    want: dict[str, Any] = {"type": cond_type, "status": "True" if status else "False", "reason": reason,
                            "message": message, "observedGeneration": generation}
    have = next((c for c in current if c.get("type") == cond_type), {})
    flipped = have.get("status") != want["status"]
    want["lastTransitionTime"] = (have.get("lastTransitionTime") if not flipped else None) or rfc3339(now)
    if not flipped and all(have.get(k, "" if k != "observedGeneration" else None) == want[k] for k in _COMPARED):
        return None
    return [want if c.get("type") == cond_type else c for c in current] if have else [*current, want]
