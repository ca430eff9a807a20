"""What is running: the release version, one source for it (`pyproject.toml`'s `version`).

An installed wheel or image answers from its package metadata (`importlib.metadata`); a source tree that
is not installed reads `pyproject.toml` beside the package; anything else is `0+unknown`, a version that
sorts before every release. The git commit a build came from is the setting `CREFN_REVISION`
(`functions.runtime.settings`), which the image bakes in at build time.
"""

from __future__ import annotations

import functools
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as installed_version
from pathlib import Path

DISTRIBUTION = "cre-functions"
UNKNOWN = "0+unknown"
PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


@functools.cache
def version() -> str:
    """The version of the code that runs."""
    try:
        return installed_version(DISTRIBUTION)
    except PackageNotFoundError:
        return source_version(PYPROJECT)


def source_version(pyproject: Path) -> str:
    """The `project.version` of a `pyproject.toml`, or UNKNOWN when it cannot be read. (tomllib is imported here:
    an installed wheel, every served process, never reads it.)"""
    import tomllib

    try:
        found = tomllib.loads(pyproject.read_text())["project"]["version"]
    except (OSError, tomllib.TOMLDecodeError, KeyError, TypeError):
        return UNKNOWN
    return found if isinstance(found, str) and found else UNKNOWN
