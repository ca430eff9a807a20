"""The `validate` function: `read` (what the event names, read fresh) and `decide` (pure), served by
`functions.main` as the Knative Service `crefn-validate`."""

from functions.validate.decide import FUNCTION
from functions.validate.read import ACCEPTS, handle

__all__ = ["ACCEPTS", "FUNCTION", "handle"]
