"""The documentation as the tests read it: a page's sections, its headings' anchors and its links.

A section runs from its heading to the next heading of the same level or above, outside fenced code (a shell
comment such as `# list ...` in a code block is not a heading). Anchors are GitHub's: the heading lower-cased,
punctuation but `-` and `_` dropped, each space a `-`.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.paths import REPO

DOCS = REPO / "docs"
LINK = re.compile(r"\]\(([^)\s]+)\)")


def outside_code(text: str) -> list[tuple[str, bool]]:
    """Each line of a Markdown text, and whether it is outside fenced code."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            lines.append((line, False))
        else:
            lines.append((line, not fenced))
    return lines


def heading_level(line: str) -> int:
    match = re.match(r"(#{1,6}) ", line)
    return len(match.group(1)) if match else 0


def section(page: str, heading: str) -> str:
    """The text under `heading` (e.g. `## Dead letters`) in `docs/<page>`, the heading excluded."""
    level = heading_level(heading)
    lines = outside_code((DOCS / page).read_text())
    (start,) = [n for n, (line, prose) in enumerate(lines) if prose and line == heading]
    body = []
    for line, prose in lines[start + 1:]:
        if prose and 0 < heading_level(line) <= level:
            break
        body.append(line)
    return "\n".join(body)


def anchors(path: Path) -> set[str]:
    return {re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
            for line, prose in outside_code(path.read_text()) if prose and heading_level(line)}


def links(path: Path) -> list[str]:
    """The relative links of a page (web addresses left out)."""
    return [target for line, prose in outside_code(path.read_text()) if prose for target in LINK.findall(line)
            if not re.match(r"[a-z]+:", target)]
