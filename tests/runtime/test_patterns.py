"""Tenants' patterns as Go's `regexp` (RE2) reads them: ASCII classes, named groups, what RE2 refuses refused with
Go's form of the message, and a pattern that would backtrack for ever in Python's `re` answering."""

from __future__ import annotations

import pytest

from functions.runtime.patterns import BadPattern, compile_go


def test_named_groups_and_ascii_classes() -> None:
    pattern = compile_go(r"(?P<size>\d+)\s+(?P<algBW>[\d.]+)(?:\s+x(?P<extra>\w+))?")
    assert pattern.names == frozenset({"size", "algBW", "extra"})
    assert pattern.search("   1024   2.50") == {"size": "1024", "algBW": "2.50"}
    assert compile_go(r"\d+").search("٣٤") is None  # Arabic-Indic digits are not \d in RE2
    assert compile_go(r"\w+").search("é") is None
    assert pattern.search("nothing here") is None


@pytest.mark.parametrize(("regex", "said"), [
    (r"(a)\1", "error parsing regexp: invalid escape sequence: `\\1`"),
    (r"a{1001}", "error parsing regexp: invalid repetition size: `{1001}`"),
    (r"[z-a]", "error parsing regexp: invalid character class range: `z-a`"),
])
def test_what_re2_refuses(regex: str, said: str) -> None:
    with pytest.raises(BadPattern) as refused:
        compile_go(regex)
    assert str(refused.value) == said


def test_lookaround_is_refused() -> None:
    with pytest.raises(BadPattern) as refused:
        compile_go(r"step (?=\d)")
    assert str(refused.value).startswith("error parsing regexp: ")


def test_a_catastrophic_pattern_for_a_backtracking_engine_answers() -> None:
    # Python's re would not return from this search within the age of the universe; RE2 is linear in the line
    assert compile_go(r"^(a+)+$").search("a" * 50_000 + "b") is None
