"""The `parity` function: `read` (what the event names, read fresh) and `decide` (pure), served by
`functions.main` as the Knative Service `crefn-parity`."""

from functions.parity.decide import FUNCTION
from functions.parity.read import ACCEPTS, handle

__all__ = ["ACCEPTS", "FUNCTION", "handle"]
