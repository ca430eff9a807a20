"""CEL (Common Expression Language) expressions over plain JSON values, for the dev stack's admission webhook
(`localstack.cluster.admission`), which evaluates the CRDs' `x-kubernetes-validations` with them.

    env = Environment(["node"])
    expr = env.compile("node.spec.taints.exists(t, t.key == 'k' && t.effect == 'NoSchedule')")
    expr.check({"node": node_json})          # True / False; a non-bool result is an EvaluationError

Variables are `dyn`, values JSON-like Python values. A compile error (an undeclared variable is one: the
expression is type-checked) raises `CompileError`, a runtime error `EvaluationError`. A variable declared
`optional` is bound as a CEL optional (`optional.none()` when left out: Kubernetes' `optionalOldSelf`).
Library: cel-expr-python (strings, optional, bindings); results and errors read by `functions.domain.cel`.
Why this library, and how it differs from Kubernetes' CEL: docs/development.md#the-cel-library.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from cel_expr_python import cel as _cel
from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings

from functions.domain import cel as rules_cel
from functions.domain.cel import one_line, value_of

_OPT_VALUE = "crefn_optional_value_"
_OPT_PRESENT = "crefn_optional_present_"


class CelError(Exception):
    """A CEL expression could not be compiled or evaluated."""


class CompileError(CelError):
    """The expression does not parse or type-check (unknown variable, function or overload)."""


class EvaluationError(CelError):
    """Evaluating the expression failed, or a check did not yield a bool."""


class Expression:
    """A compiled expression, to evaluate many times. Thread-safe for evaluation."""

    def __init__(self, source: str, program: Any, variables: tuple[str, ...], optional: tuple[str, ...]) -> None:
        self.source = source
        self.variables = variables
        self.optional = optional
        self._program = program

    def evaluate(self, values: Mapping[str, Any]) -> Any:
        """The result as a plain Python value. Every declared variable must be given, except optional
        ones (left out: `optional.none()`)."""
        data: dict[str, Any] = {}
        for name in self.variables:
            if name in self.optional:
                present = name in values
                data[_OPT_PRESENT + name] = present
                data[_OPT_VALUE + name] = values[name] if present else None
            elif name in values:
                data[name] = values[name]
            else:
                raise EvaluationError(f"no value for variable {name!r}")
        try:
            return value_of(self._program, data)
        except rules_cel.CelError as e:
            raise EvaluationError(str(e)) from e

    def check(self, values: Mapping[str, Any]) -> bool:
        """Evaluate a predicate: the result must be a bool."""
        result = self.evaluate(values)
        if not isinstance(result, bool):
            raise EvaluationError(f"expected a bool result, got {type_name(result)}")
        return result

    def __repr__(self) -> str:
        return f"Expression({self.source!r})"


def type_name(value: Any) -> str:
    """The CEL type name of a plain value."""
    if value is None:
        return "null"
    for py, name in ((bool, "bool"), (int, "int"), (float, "double"), (str, "string"), (bytes, "bytes"),
                     (list, "list"), (dict, "map")):
        if isinstance(value, py):
            return name
    return type(value).__name__


class Environment:
    """Declared variables (all `dyn`) and the extensions; compiles expressions."""

    def __init__(self, variables: Iterable[str] = (), optional: Iterable[str] = ()) -> None:
        self.variables = tuple(variables)
        self.optional = tuple(optional)
        unknown = set(self.optional) - set(self.variables)
        if unknown:
            raise ValueError(f"optional variables must be declared: {sorted(unknown)}")
        declared: dict[str, Any] = {}
        for name in self.variables:
            if name in self.optional:
                declared[_OPT_VALUE + name] = _cel.Type.DYN
                declared[_OPT_PRESENT + name] = _cel.Type.BOOL
            else:
                declared[name] = _cel.Type.DYN
        self._env = _cel.NewEnv(variables=declared, extensions=[
            ext_strings.ExtStrings(), ext_optional.ExtOptional(), ext_bindings.ExtBindings()])

    def compile(self, source: str) -> Expression:
        text = source
        for name in self.optional:  # bind the optional as a local of the expression
            text = (f"cel.bind({name}, {_OPT_PRESENT}{name} ? optional.of({_OPT_VALUE}{name}) : optional.none(), "
                    f"({text}))")
        try:
            program = self._env.compile(text)
        except Exception as e:
            message = str(e)
            for name in self.optional:
                message = message.replace(_OPT_VALUE + name, name)
            raise CompileError(one_line(message)) from e
        return Expression(source, program, self.variables, self.optional)
