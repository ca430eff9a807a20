"""Credential files (`functions.runtime.credentials`): read at each use, stripped, and refused with a message that
names the file and never shows what it holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from functions.runtime.credentials import CredentialFileError, read_credential, visible_ascii


def test_a_credential_is_read_stripped_and_again_after_rotation(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("  t0ken-one\n")
    assert read_credential(path) == "t0ken-one"
    path.write_text("t0ken-two\n")
    assert read_credential(str(path)) == "t0ken-two"


def test_a_missing_file_is_named_with_the_reason(tmp_path: Path) -> None:
    path = tmp_path / "missing"
    with pytest.raises(CredentialFileError) as refused:
        read_credential(path)
    assert str(refused.value) == f"{path} cannot be read (No such file or directory)"


@pytest.mark.parametrize(("content", "size"), [(b"\n", 1), (b"t0k en\n", 7), (b"t\xe9ken", 5)],
                         ids=["empty", "a-space-inside", "not-ascii"])
def test_a_file_without_a_credential_is_named_never_shown(tmp_path: Path, content: bytes, size: int) -> None:
    path = tmp_path / "secret"
    path.write_bytes(content)
    with pytest.raises(CredentialFileError) as refused:
        read_credential(path)
    assert str(refused.value) == f"{path} holds no credential (one line of visible ASCII, got {size} bytes)"


def test_visible_ascii_is_a_header_token() -> None:
    assert (visible_ascii("abc!~"), visible_ascii(""), visible_ascii("a b"), visible_ascii("tab\t")) == (
        True, False, False, False)
