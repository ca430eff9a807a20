"""The `nodehealth` function: `read` (what the event names, read fresh) and `decide` (pure), served by
`functions.main` as the Knative Service `crefn-nodehealth`."""

from functions.nodehealth.decide import FUNCTION
from functions.nodehealth.read import ACCEPTS, handle

__all__ = ["ACCEPTS", "FUNCTION", "handle"]
