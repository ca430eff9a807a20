"""`python -m localstack.bench`: `make bench`'s table (see `localstack.bench.run`)."""

from __future__ import annotations

import sys

from localstack.bench.run import main

if __name__ == "__main__":
    sys.exit(main())
