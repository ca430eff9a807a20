"""The `launch` function: `read` (what the event names, read fresh) and `decide` (pure), served by
`functions.main` as the Knative Service `crefn-launch`."""

from functions.launch.decide import FUNCTION
from functions.launch.read import ACCEPTS, handle

__all__ = ["ACCEPTS", "FUNCTION", "handle"]
