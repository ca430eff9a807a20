"""The `measure` function: `read` (the measurements and what their samples are made of, read fresh) and `decide`
(pure), served by `functions.main` as the Knative Service `crefn-measure`."""

from functions.measure.decide import FUNCTION
from functions.measure.read import ACCEPTS, handle

__all__ = ["ACCEPTS", "FUNCTION", "handle"]
