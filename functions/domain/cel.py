"""CEL expressions of a Job: the node-health check (`spec.nodeHealthMonitor.cel`) and the performance
thresholds (`spec.thresholds`), compiled and evaluated as CRE does. Pure: no I/O; the handlers read the
Node or the measurement and call these.

CRE's environments (cel-go): node health has one variable `node`, `map(string, dyn)`, optional types on,
the Node's JSON with CRE's defaults filled in; thresholds have one variable `value`, `double`. A result
whose static type is not `bool` is a compile error (`CEL expression must return bool, got dyn`,
`expression must return bool, got double`); a runtime error raises `CelError`. Programs are cached by
expression text (`functools.lru_cache`). The functions run tenant expressions through `outcomes`, in a
process of their own under a time budget (`functions.runtime.celbudget`), the only one that loads the library
(on the first compile); one longer than `MAX_LENGTH` is rejected before it is compiled. The environments and
error texts: docs/functions.md#cel-environments-and-errors; the library: docs/architecture.md#the-cel-library
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

Variable = Literal["node", "value"]
Failure = Literal["length", "compile", "evaluate", "interrupted"]
"""Where an expression failed: too long, does not compile (or return bool), failed on this input, or stopped
before it gave a result (over its time budget, or the process evaluating it ended)."""

MAX_LENGTH = 2048
"""The longest expression, in characters: the Job CRD's `maxLength` of `spec.nodeHealthMonitor.cel.expression`
(the API server enforces it there; `spec.thresholds` has no cap in the CRD, so it is applied here, to both)."""

_NODE_DEFAULTS: tuple[tuple[str, tuple[tuple[str, Callable[[], Any]], ...]], ...] = (
    ("metadata", (("labels", dict), ("annotations", dict))),
    ("spec", (("taints", list), ("unschedulable", bool))),
    ("status", (("conditions", list), ("addresses", list), ("capacity", dict), ("allocatable", dict))),
)
_NOT_BOOL: Mapping[str, str] = {"node": "CEL expression must return bool, got {}",
                                "value": "expression must return bool, got {}"}
# the checker errors that cel-go's CrossTypeNumericComparisons(true) turns into valid overloads
_CROSS_NUMERIC = re.compile(r"ERROR: <input>:\d+:\d+: found no matching overload for '_(<|<=|>|>=)_' applied to "
                            r"'\((int|uint|double), (int|uint|double)\)'")
_CEL_GO_NAMES: Mapping[str, str] = {"NULL": "null_type", "TIMESTAMP": "google.protobuf.Timestamp",
                                    "DURATION": "google.protobuf.Duration"}


class CelError(ValueError):
    """The expression does not compile, does not return bool, or failed on this input (one line)."""


@dataclass(frozen=True)
class CelOutcome:
    """One evaluation of a tenant expression: its value, or where it failed and why (one line)."""

    value: bool = False
    failure: Failure | None = None
    error: str = ""

    @property
    def rejects(self) -> bool:
        """The expression cannot be used on any input: too long, does not compile, or was interrupted."""
        return self.failure in ("length", "compile", "interrupted")


def outcomes(variable: Variable, expression: str, subjects: Iterable[Any]) -> Iterator[CelOutcome]:
    """The expression on each subject (a Node's JSON, or a measured value), in order. An expression that
    cannot be used gives one rejecting outcome before any subject, and no more: with no subjects, this
    only checks it."""
    failure: Failure = "length"
    if not (reason := too_long(expression)):
        failure, reason = "compile", check(expression, variable)
    if reason:
        yield CelOutcome(failure=failure, error=reason)
        return
    for subject in subjects:
        try:
            yield CelOutcome(node_health(expression, subject) if variable == "node" else threshold(expression, subject))
        except CelError as e:
            yield CelOutcome(failure="evaluate", error=str(e))


def too_long(expression: str) -> str:
    """Why the expression is too long, in the API server's words for a string over a CRD's `maxLength`
    (`<field> should be at most 2048 chars long`, without the field); "" when it is not."""
    return f"should be at most {MAX_LENGTH} chars long" if len(expression) > MAX_LENGTH else ""


def node_health(expression: str, node: Mapping[str, Any]) -> bool:
    """True when the expression calls the Node unhealthy. `node` is the Node's JSON (not modified)."""
    return _evaluate(_program("node", expression), {"node": _with_node_defaults(node)}, "node")


def threshold(expression: str, value: float) -> bool:
    """True when the measured value satisfies the threshold."""
    return _evaluate(_program("value", expression), {"value": float(value)}, "value")


def check(expression: str, variable: Variable) -> str:
    """Why the expression cannot serve as a check on `variable` ("node" or "value"); "" when it can."""
    if variable not in _NOT_BOOL:
        raise ValueError(f"unknown CEL variable {variable!r}: expected 'node' or 'value'")
    compiled = _compile(variable, expression)
    return compiled if isinstance(compiled, str) else ""


def _with_node_defaults(node: Mapping[str, Any]) -> dict[str, Any]:
    filled = dict(node)
    for part, fields in _NODE_DEFAULTS:
        section = filled.get(part)
        section = dict(section) if isinstance(section, Mapping) else {}
        for key, empty in fields:
            if section.get(key) is None:  # absent, or null as some clients write an unset field
                section[key] = empty()
        filled[part] = section
    return filled


def _program(variable: Variable, expression: str) -> Any:
    compiled = _compile(variable, expression)
    if isinstance(compiled, str):
        raise CelError(compiled)
    return compiled


def value_of(program: Any, data: Mapping[str, Any]) -> Any:
    """A compiled program's result on `data`, as a plain Python value; CelError (one line) when it fails.
    The dev stack's CRD rules (`localstack.cluster.cel`) are evaluated through it too."""
    result = _result(program, data)
    return result.plain_value()


def _result(program: Any, data: Mapping[str, Any]) -> Any:
    try:
        result = program.eval(data=dict(data))
    except Exception as e:  # a value the bindings cannot convert (TypeError, ValueError, RuntimeError)
        raise CelError(one_line(str(e))) from e
    if result.type() == _library().Type.ERROR:
        raise CelError(one_line(str(result.plain_value())))
    return result


def _evaluate(program: Any, data: dict[str, Any], variable: Variable) -> bool:
    result = _result(program, data)
    if result.type() != _library().Type.BOOL:  # only a threshold compiled unchecked gets here (see `_compile`)
        raise CelError(_NOT_BOOL[variable].format(_type_name(result.type())))
    return bool(result.plain_value())


@functools.lru_cache(maxsize=1024)
def _compile(variable: Variable, expression: str) -> Any:
    """The compiled program, or the one-line reason it cannot be used."""
    try:
        return _returning_bool(variable, _environment(variable, dyn=False).compile(expression))
    except Exception as e:  # the bindings raise RuntimeError carrying cel-cpp's status text
        reason = one_line(str(e)) if variable == "node" else _except_cross_numeric(str(e))
        if reason:
            return reason
    # a threshold whose only errors are comparisons of int, uint and double: `value` as dyn
    try:
        return _returning_bool(variable, _environment(variable, dyn=True).compile(expression))
    except Exception as e:
        reason = _except_cross_numeric(str(e))
        if reason:
            return reason
    # still such comparisons, of a computed double (`value * 2.0 >= 900`): unchecked, its result type
    # is checked when evaluated
    return _environment(variable, dyn=False).compile(expression, disable_check=True)


def _returning_bool(variable: Variable, program: Any) -> Any:
    if program.return_type() != _library().Type.BOOL:
        return _NOT_BOOL[variable].format(_type_name(program.return_type()))
    return program


def _except_cross_numeric(text: str) -> str:
    """The compile errors on one line, without those that cross-type numeric comparisons make valid."""
    errors = re.split(r"\n(?=ERROR: )", _without_status(text))
    return " ".join(" ".join(error.split()) for error in errors
                    if not _CROSS_NUMERIC.fullmatch(error.split("\n", 1)[0]))


@functools.cache
def _library() -> Any:
    """cel-expr-python's `cel` module, imported on first use (see the module's text)."""
    from cel_expr_python import cel

    return cel


@functools.cache
def _environment(variable: Variable, dyn: bool) -> Any:
    cel = _library()
    if variable == "node":
        from cel_expr_python.ext import ext_optional

        return cel.NewEnv(variables={"node": cel.Type.Map(cel.Type.STRING, cel.Type.DYN)},
                          extensions=[ext_optional.ExtOptional()])
    return cel.NewEnv(variables={"value": cel.Type.DYN if dyn else cel.Type.DOUBLE})


def _type_name(cel_type: Any) -> str:
    """cel-go's spelling of a type (`dyn`, `double`, `map(string, dyn)`), as CRE's messages show it."""
    name = re.sub(r"[A-Z_]+", lambda m: _CEL_GO_NAMES.get(m.group(0), m.group(0).lower()), str(cel_type.name()))
    return name.replace("<", "(").replace(">", ")")


def _without_status(text: str) -> str:
    """The library's message without the status code around it (`INVALID_ARGUMENT: ... [INVALID_ARGUMENT]`)."""
    return re.sub(r" \[[A-Z_]+\]$", "", re.sub(r"^(?!ERROR: )[A-Z_]+: ", "", text.strip()))


def one_line(text: str) -> str:
    """The library's error text on one line, without its status code."""
    return " ".join(_without_status(text).split())
