"""The house, as the checks and `make mutation` see it: a folder per function (`functions.registry.HANDLERS`),
the shared domain, the runtime and the tools. Pure: the domain and every module of a function folder but its
`read` (and its `__init__`, which only names the function's parts); a function's I/O is its `read`."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.paths import REPO


def registered(root: Path = REPO) -> tuple[str, ...]:
    """`functions.registry.HANDLERS`, read from its source: importing it would import `functions`, which the
    process `make mutation` forks its mutants' runs from must not have loaded (tests/mutation/constants.py)."""
    for node in ast.parse((root / "functions" / "registry.py").read_text()).body:
        if isinstance(node, ast.AnnAssign | ast.Assign) and "HANDLERS" in ast.unparse(node).split("=", 1)[0]:
            assert node.value is not None
            return tuple(ast.literal_eval(node.value))
    raise LookupError("functions/registry.py names no HANDLERS")


HANDLERS = registered()

ROOMS = ("runtime", "domain", "tools")
"""The folders of `functions/` that are not a function's."""


def modules_of(package: str, root: Path = REPO) -> list[str]:
    """The modules of a package of `functions/` (`domain`, a function's name), by dotted name, `__init__` left out."""
    return sorted(f"functions.{package}.{p.stem}" for p in (root / "functions" / package).glob("*.py")
                  if p.name != "__init__.py")


def pure_modules(root: Path = REPO, functions: tuple[str, ...] = HANDLERS) -> list[str]:
    return [*modules_of("domain", root), *(m for name in functions for m in modules_of(name, root)
                                          if not m.endswith(".read"))]


def is_pure(name: str) -> bool:
    """Whether a module, or a mutant or constant named after its module (`functions.restart.decide.x_decide__mutmut_1`,
    `functions.domain.pods.TAIL_BYTES__const_1`), is of a pure module."""
    parts = name.split(".")
    return len(parts) > 2 and parts[0] == "functions" and (
        parts[1] == "domain" or (parts[1] in HANDLERS and parts[2] != "read"))

