"""`python -m localstack [ARGS]`: `cre-fn dev [ARGS]`, the local stack and its demo (see `localstack.dev`)."""

from __future__ import annotations

import sys

from functions.cli import main

if __name__ == "__main__":
    sys.exit(main(["dev", *sys.argv[1:]]))
