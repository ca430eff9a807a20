"""Every `kubectl` command the docs and the runbooks give, checked: parsed by kubectl's own rules for naming
objects (a `get` or `describe` that names several kinds says `TYPE/NAME` for each: `get sinkbinding a pingsource b`
asks for four sinkbindings), and each read-only one (`get`, `describe`) run as written against the session's API
server, placeholders filled in: it may find nothing there, but kubectl must take it."""

from __future__ import annotations

import re
import shlex
import subprocess
from functools import cache
from pathlib import Path

import pytest

from localstack.cluster.apiserver import LocalCluster
from localstack.manifests import installs, kubectl, render
from tests.support import paths

DOCS = sorted([*(paths.REPO / "docs").glob("*.md"), *(paths.REPO / "docs" / "runbooks").glob("*.md")])
FLAGS_WITH_VALUE = {"-n", "--namespace", "-l", "--selector", "-o", "--output", "-c", "--container", "-L",
                    "--label-columns", "--field-selector", "--kubeconfig", "--context", "-f", "--filename", "-k",
                    "--type", "-p", "--patch", "--audience"}
"""kubectl's flags that take the next word as their value (as the docs use them)."""
READS = ("get", "describe")


def commands() -> list[tuple[str, str]]:
    """(page, command) for every whole `kubectl` command of a shell block or an inline span with arguments."""
    found = []
    for page in DOCS:
        text = page.read_text()
        blocks = re.findall(r"```(?:sh|bash|console)?\n(.*?)```", text, re.S)
        lines = [line.strip() for block in blocks for line in block.replace("\\\n", " ").splitlines()]
        spans = [" ".join(s.split()) for s in re.findall(r"`(kubectl [^`]+)`", text)]
        for command in [*lines, *spans]:
            if command.startswith("kubectl ") and len(command.split()) > 2:
                found.append((page.relative_to(paths.REPO).as_posix(), command))
    return found


def argv_of(command: str) -> list[str]:
    """The kubectl words of a command line: up to a pipe, `;` or a comment; `<placeholders>` and shell
    variables filled in."""
    line = re.split(r"\s[|;#]\s?|\s&&\s", command)[0]
    line = re.sub(r"<[^>]+>", "x", line)
    line = re.sub(r'"?\$\{?\w+[^"\s]*"?', "x", line)
    return shlex.split(line)


def verb_and_objects(argv: list[str]) -> tuple[str, list[str]]:
    """The verb and the positional words after it (flags and their values left out)."""
    words, skip = [], False
    for word in argv[1:]:
        if skip:
            skip = False
        elif word in FLAGS_WITH_VALUE:
            skip = True
        elif not word.startswith("-"):
            words.append(word)
    return (words[0], words[1:]) if words else ("", [])


@cache
def kinds() -> frozenset[str]:
    """Words that name a kind: every kind the installs render (lower case, singular and plural) and kubectl's
    usual short names."""
    names = {d["kind"].lower() for name in installs() for d in render(f"installs/{name}")}
    return frozenset(names | {f"{n}s" for n in names} | {
        "ksvc", "pod", "pods", "deploy", "deployment", "secret", "configmap", "node", "nodes", "job", "jobs",
        "trainjob", "trainjobs", "event", "events", "broker", "brokers", "trigger", "triggers"})


@pytest.mark.parametrize(("page", "command"), commands())
def test_each_command_names_its_objects_as_kubectl_reads_them(page: str, command: str) -> None:
    verb, words = verb_and_objects(argv_of(command))
    objects = [w for w in words if "=" not in w]  # label's key=value pairs are no objects
    if verb not in (*READS, "delete", "label", "patch") or len(objects) < 2:
        return
    slashed = [o for o in objects if "/" in o]
    assert not slashed or len(slashed) == len(objects), (
        f"{page}: {command!r}: give every object as TYPE/NAME, or a type and its names (kubectl refuses a mix)")
    if not slashed:
        names = objects[1:]
        assert not set(names) & kinds(), (
            f"{page}: {command!r}: {sorted(set(names) & kinds())} would be read as names of "
            f"{objects[0]}: several kinds take TYPE/NAME each")


def test_the_check_catches_the_mistake_it_is_for() -> None:
    verb, objects = verb_and_objects(argv_of("kubectl -n crefn-system get sinkbinding crefn-resync pingsource x"))
    assert (verb, objects) == ("get", ["sinkbinding", "crefn-resync", "pingsource", "x"])
    assert "pingsource" in kinds()


@pytest.mark.kube
@pytest.mark.parametrize(("page", "command"), [(p, c) for p, c in commands()
                                               if verb_and_objects(argv_of(c))[0] in READS])
def test_each_read_runs_as_written(page: str, command: str, cluster: LocalCluster) -> None:
    argv = argv_of(command)
    result = subprocess.run([kubectl(), "--kubeconfig", str(cluster.kubeconfig), *argv[1:]], capture_output=True,
                            text=True, timeout=60, check=False)
    refused = [line for line in result.stderr.splitlines() if line.strip()
               and "NotFound" not in line and "doesn't have a resource type" not in line
               and "No resources found" not in line]
    assert result.returncode == 0 or not refused, f"{page}: {command!r}: {result.stderr.strip()}"


def test_every_page_is_read() -> None:
    assert {Path(p).name for p, _ in commands()} >= {"operating.md", "CREFnResyncFailing.md", "NVCREJobStuck.md"}
