"""The README is the front door: short, with lines a terminal shows, and every link it gives leads to a page of
`docs/`. Every relative link of the documentation resolves, to the heading it names when it names one.

The settings and metrics tables of `docs/operating.md` name every setting and every metric, and nothing else.
What the documentation says about the manifests (the RBAC matrix, the installs, closed by default, dead letters)
is checked against them in `test_manifests.py`.

Module docstrings under `events/`, `functions/` and `localstack/` are at most 12 lines, and every page of the
documentation they point to (`docs/operating.md#settings`) exists, with the heading named.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from pydantic import AliasChoices

from functions.runtime.metrics import JobStates, ProcessMetrics
from functions.runtime.settings import Settings
from tests.support.docs import DOCS, REPO, anchors, links, section

README = REPO / "README.md"
PAGES = sorted([README, *DOCS.rglob("*.md")])


def test_the_readme_is_at_most_250_lines_none_over_200_characters() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= 250
    assert [n for n, line in enumerate(lines, 1) if len(line) > 200] == []


def test_the_readme_starts_with_the_two_commands() -> None:
    lines = README.read_text().splitlines()
    assert lines[2] == "```sh" and lines[3].startswith("make run ") and lines[4].startswith("make test ")


def test_the_readme_links_every_page_of_docs() -> None:
    targets = {(README.parent / link.split("#")[0]).resolve() for link in links(README)}
    assert {page.resolve() for page in DOCS.glob("*.md")} <= targets
    assert (DOCS / "runbooks" / "README.md").resolve() in targets


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(page: Path) -> None:
    for link in links(page):
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        assert target.is_file(), f"{link}: no such file"
        if anchor:
            assert anchor in anchors(target), f"{link}: no such heading"


def first_cells(page: str, heading: str) -> set[str]:
    """The names in backticks in the first column of the table under `heading`."""
    return {name for line in section(page, heading).splitlines() if line.startswith("| `")
            for name in re.findall(r"`([^`]+)`", line.split("|")[1])}


def test_the_settings_table_names_every_setting() -> None:
    variables: set[str] = set()
    for name, field in Settings.model_fields.items():
        alias = field.validation_alias
        variables |= {str(c) for c in alias.choices} if isinstance(alias, AliasChoices) else {f"CREFN_{name.upper()}"}
    assert first_cells("operating.md", "## Settings") == variables


def test_the_metrics_table_names_every_metric() -> None:
    exposed = {f"{m.name}_total" if m.type == "counter" else m.name for m in ProcessMetrics().collect()}
    exposed |= {m.name for m in JobStates(()).collect()}
    assert first_cells("operating.md", "## Metrics") == exposed


MODULE_DOCSTRING_LINES = 12
POINTER = re.compile(r"((?:docs|localstack)/[\w./-]+\.md)(?:#([\w-]+))?")


def module_docstrings(*roots: str) -> dict[str, str]:
    """Each module's docstring ("" when it has none), by its path in the repository."""
    return {str(path.relative_to(REPO)): ast.get_docstring(ast.parse(path.read_text()), clean=False) or ""
            for root in roots for path in sorted((REPO / root).rglob("*.py"))}


def test_module_docstrings_are_at_most_12_lines() -> None:
    docstrings = module_docstrings("events", "functions", "localstack")
    long = {path: len(text.splitlines()) for path, text in docstrings.items()
            if len(text.splitlines()) > MODULE_DOCSTRING_LINES}
    assert long == {}, "say where the module sits and what it relies on; the rest goes to docs/"


def test_the_pages_module_docstrings_point_to_exist() -> None:
    for path, text in module_docstrings("events", "functions", "localstack", "tests").items():
        for page, anchor in POINTER.findall(text):
            target = REPO / page
            assert target.is_file(), f"{path}: {page}: no such file"
            assert not anchor or anchor in anchors(target), f"{path}: {page}#{anchor}: no such heading"
