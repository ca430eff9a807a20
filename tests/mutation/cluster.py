"""`python -m tests.mutation.cluster DIR`: the test session's API server (as the `cluster` fixture starts
it, with the RBAC of knative/), kept running in DIR until SIGTERM, so that every mutant's tests attach to
it (`CREFN_TEST_CLUSTER=DIR`) instead of starting their own."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

from localstack.cluster.apiserver import LocalCluster
from tests.conftest import FUNCTION_USERS, apply_rbac


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with LocalCluster(Path(sys.argv[1]), users=FUNCTION_USERS,
                      cre_groups=("nvcre.nvidia.com", "cre.nvidia.com")) as cluster:
        apply_rbac(cluster)
        cluster.hand_over()
        print(f"[mutation] API server {cluster.url} shared from {sys.argv[1]}", flush=True)
        while True:
            signal.pause()


if __name__ == "__main__":
    main()
