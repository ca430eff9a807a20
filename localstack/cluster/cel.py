"""CEL (Common Expression Language) expressions over plain JSON values.

Used by the dev stack's admission webhook (`localstack.cluster.admission`) to evaluate the CRDs'
`x-kubernetes-validations`. It depends on nothing else in the project, so the product can later
import an equivalent module (for node or condition checks) without pulling in the dev stack.

    env = Environment(["node"])
    expr = env.compile("node.spec.taints.exists(t, t.key == 'k' && t.effect == 'NoSchedule')")
    expr.check({"node": node_json})          # True / False; a non-bool result is an EvaluationError

Variables are dynamically typed (`dyn`): values are JSON-like Python values (dict, list, str, int,
float, bool, None). A compile error raises `CompileError` (an undeclared variable is one: the
expression is type-checked against the declared names), a runtime error (missing key, no matching
overload, division by zero, ...) raises `EvaluationError`. A variable declared `optional` is bound
as a CEL optional: `optional.of(value)` when given, `optional.none()` when left out (Kubernetes'
`optionalOldSelf`); the expression uses `.hasValue()`, `.value()`, `.orValue()`, `.?field`.

Library: cel-expr-python (Google's cel-cpp runtime; binary wheels for Linux x86_64/aarch64 and
macOS arm64), with its strings (`split`, `lowerAscii`, `indexOf`, ...), optional and bindings
extensions. Chosen by running one case table, `tests/localstack/test_cel.py` (65 cases: the rules of the
upstream CRDs, each passing and failing; node, label, taint and condition checks; int, double and
cross-type comparisons; errors), on the three CEL libraries on PyPI:

| case                                       | cel-python 0.5.0 | c-e-l 0.10.0 (Rust) | cel-expr-python 0.1.3 |
|--------------------------------------------|------------------|---------------------|-----------------------|
| upstream rules without `split` (39 cases)  | pass             | pass                | pass                  |
| `k.split('/')[0].size() <= 253` (4 cases)  | fail: no `split` | fail: no `split`    | pass                  |
|   ... with `split` as a custom function    | pass             | pass                | (not needed)          |
| node unschedulable / label / taint / Ready | pass             | pass                | pass                  |
| `value >= 900`: 950, 899, 950.0, 950.5     | pass             | pass                | pass                  |
| `value == 950`, value 950.0                | fail: overload   | pass                | pass                  |
| `x.?a.?b.orValue(...)` (optionals)         | fail: parse      | fail: parse         | pass                  |
| non-boolean result                         | pass (wrapper)   | pass (wrapper)      | pass (wrapper)        |
| undefined variable, unknown function       | error at eval    | error at eval       | error at compile      |
| missing key, no overload, syntax error     | error            | error               | error                 |
| all 65 cases                               | 57 (61 w/ split) | 58 (62 w/ split)    | 65                    |
| compile + evaluate a rule                  | ~1.1 ms          | ~0.08 ms            | ~0.5 ms + 5-30 µs     |

(c-e-l: common-expression-language.)

cel-expr-python passes every case with no custom function, type-checks variables and functions at
compile time as Kubernetes (cel-go) does, and has the optional syntax Kubernetes rules may use;
compiled expressions are cached, so its compile cost is paid once per rule. The Rust bindings are
the fastest but lack the strings extension and optionals; cel-python lacks `split`, optionals and
heterogeneous equality (`1 == 1.0` on dyn values, which the CEL spec and Kubernetes allow).

Known differences from Kubernetes' CEL environment: its own libraries (lists `isSorted`/`sum`/
`min`/`max`/`indexOf`, regex `find`/`findAll`, `url`, `quantity`, `ip`/`cidr`, `format`, `semver`,
`authz`) are not declared here, so a rule using them is a compile error (loud, never a silent
pass); there are no cost limits; a value is never converted by its schema's `format` (date-time,
duration and byte strings stay strings).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from cel_expr_python import cel as _cel
from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings

_OPT_VALUE = "crefn_optional_value_"
_OPT_PRESENT = "crefn_optional_present_"


class CelError(Exception):
    """A CEL expression could not be compiled or evaluated."""


class CompileError(CelError):
    """The expression does not parse or type-check (unknown variable, function or overload)."""


class EvaluationError(CelError):
    """Evaluating the expression failed, or a check did not yield a bool."""


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


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
            result = self._program.eval(data=data)
        except Exception as e:  # the bindings raise RuntimeError/TypeError/ValueError for bad input
            raise EvaluationError(_one_line(str(e))) from e
        if result.type() == _cel.Type.ERROR:
            raise EvaluationError(_one_line(str(result.plain_value())))
        return result.plain_value()

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
            raise CompileError(_one_line(message)) from e
        return Expression(source, program, self.variables, self.optional)
