"""The `workloadrun` function: `read` (what the event names, read fresh) and `decide` (pure), served by
`functions.main` as the Knative Service `crefn-workloadrun`."""

from functions.workloadrun.decide import FUNCTION
from functions.workloadrun.read import ACCEPTS, handle

__all__ = ["ACCEPTS", "FUNCTION", "handle"]
