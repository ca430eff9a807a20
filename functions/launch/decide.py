"""Launching a Job's workload (SPEC §5 `launch`), shared by `launch`, `resync` and `restart`.

`decide` is the `launch` function's decision; `decide_launch` the launch of a Job that needs one,
which `resync` and a relaunching `restart` use too. Whether a Job needs one (`why_not_launch`) is asked
once per Job read: by the reader, which reads nothing more for a Job that does not.
A managed, non-terminal Job without `workloadRef` gets the TrainJob `<job>-workload` built from
`spec.workload.trainJob` (attempt label `restartCount`, owned by the Job); then `workloadRef` and
`InProgress`/`WorkloadCreated` are written, then its first phase (`FirstPhase`). An existing
`<job>-workload` is adopted, replaced or a conflict; a create the API refuses is a Warning Event and a
retry (`create_refused`). Before the restart grace is over it waits (`functions.domain.grace`). Observe
mode: nothing. A Job being deleted that carries CRE's finalizer: CRE's deletion finished
(`functions.domain.deletion`). Adoption, conflicts and their texts: docs/functions.md#launch-and-adoption
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from events.envelope import Envelope
from functions.domain.deletion import Deleting, decide_deletion
from functions.domain.launching import LaunchObserved, decide_launch, delete_orphan
from functions.runtime.effects import Wait
from functions.runtime.plan import Plan, nothing
from functions.runtime.settings import Settings

FUNCTION = "launch"


@dataclass(frozen=True)
class Observed:
    """What the `launch` function read for one event: its Job's launch, or why there is none."""

    cause: Envelope
    where: str
    launch: LaunchObserved | None
    """None: nothing to launch, for `reason`, or not yet (`wait`)."""
    reason: str = ""
    wait: Wait | None = None
    """The restart grace the event's Job shows, not over (`grace_on_copy`): nothing was read."""
    abandoned: dict[str, Any] | None = None
    """The TrainJob this launch created before its `workloadRef` write met a conflict, when the Job read again
    leaves it an orphan (`orphaned`): it is deleted."""
    deleting: Deleting | None = None
    """A Job being deleted that carries CRE's finalizer: its deletion is finished as CRE finishes it."""


def decide(observed: Observed, settings: Settings, now: datetime) -> Plan:
    """The `launch` function's decision: its Job's launch, or the reason there is none."""
    if observed.wait is not None:
        return Plan((observed.wait,))
    if observed.deleting is not None:
        return decide_deletion(observed.deleting, settings, now)
    if observed.abandoned is not None:
        return delete_orphan(observed.abandoned, observed.reason)
    if observed.launch is None:
        return nothing(observed.reason)
    return decide_launch(observed.launch, settings, now, FUNCTION, observed.cause)
































