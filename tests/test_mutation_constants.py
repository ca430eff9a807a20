"""The mutants `make mutation` makes of the rules' module-level constants (`tests.mutation.constants`): which
literals change and how, that every mutant is valid Python, and that a mutant's module is what importers see."""

from __future__ import annotations

import ast
import subprocess
import sys

from tests.mutation.constants import ROOT, all_mutants, constant_mutants, importers, is_type_alias


def changes(module: str) -> dict[str, str]:
    return {m.name.rpartition(".")[2]: m.change for m in constant_mutants(module)}


def test_numbers_move_by_one_texts_are_wrapped_and_timedelta_arguments_count_as_numbers() -> None:
    assert changes("functions.domain.kubeevents") == {
        "NOTE_LIMIT__const_1": "NOTE_LIMIT: 1024 -> 1025", "NOTE_LIMIT__const_2": "NOTE_LIMIT: 1024 -> 1023",
        "TRUNCATED__const_1": "TRUNCATED: '... [truncated]' -> 'XX... [truncated]XX'",
        "REPORTING_CONTROLLER__const_1": "REPORTING_CONTROLLER: 'crefn.dev/controller' -> "
                                         "'XXcrefn.dev/controllerXX'",
        "CAUSE_ANNOTATION__const_1": "CAUSE_ANNOTATION: 'crefn.dev/cause' -> 'XXcrefn.dev/causeXX'"}
    assert {k: v for k, v in changes("functions.domain.pods").items() if k.startswith("DEFAULT_SCHEDULING")} == {
        "DEFAULT_SCHEDULING_GRACE__const_1": "DEFAULT_SCHEDULING_GRACE: 300 -> 301",
        "DEFAULT_SCHEDULING_GRACE__const_2": "DEFAULT_SCHEDULING_GRACE: 300 -> 299"}


def test_every_literal_of_a_tuple_and_of_an_expression_is_mutated() -> None:
    found = changes("functions.domain.pods")
    assert [found[f"TAIL_BYTES__const_{n}"] for n in range(1, 5)] == [
        "TAIL_BYTES: 32 -> 33", "TAIL_BYTES: 32 -> 31", "TAIL_BYTES: 1024 -> 1025", "TAIL_BYTES: 1024 -> 1023"]
    assert found["POD_NOT_FOUND__const_1"] == "POD_NOT_FOUND: 'PodNotFound' -> 'XXPodNotFoundXX'"
    assert found["POD_NOT_FOUND__const_2"].startswith("POD_NOT_FOUND: 'no pods for this Job")


def test_type_aliases_are_not_mutated() -> None:
    assert not [m for m in constant_mutants("functions.domain.cel") if m.name.split(".")[-1].startswith(
        ("Variable", "Failure"))]
    assert is_type_alias(ast.parse("tuple[int, str] | None", mode="eval").body)
    assert not is_type_alias(ast.parse("(1, 2)", mode="eval").body)


def test_every_mutant_is_valid_python_and_changes_the_module() -> None:
    for mutant in all_mutants():
        original = (ROOT / mutant.module.replace(".", "/")).with_suffix(".py").read_text()
        mutated = mutant.source()
        assert mutated != original, mutant.name
        ast.parse(mutated)


def test_a_test_module_that_imports_a_rules_module_is_found() -> None:
    assert "tests/domain/test_kubeevents.py" in importers("functions.domain.kubeevents")
    assert "tests/domain/test_adapter.py" not in importers("functions.domain.kubeevents")


def test_importers_see_the_mutated_value() -> None:
    """A mutant's module is loaded from its source, so a `from ... import NAME` elsewhere sees the mutation."""
    program = ("import sys; from tests.mutation.constants import MutantFinder, constant_mutants; "
               "sys.meta_path.insert(0, MutantFinder(constant_mutants('functions.domain.gotime')[0])); "
               "from functions.runtime.logreads import NS; print(NS)")
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout == "1000000001\n"  # NS: 1000000000 -> 1000000001
