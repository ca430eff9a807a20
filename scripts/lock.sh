#!/usr/bin/env bash
# Writes the image's two locks from pyproject.toml, with uv in a throwaway venv (`make lock`):
#   requirements.lock        the runtime dependencies (`[project] dependencies`, no extra), pinned, with the hashes
#                            of every file of each pinned release: the amd64 and the arm64 wheels alike
#   build-requirements.lock  the build backend (`[build-system] requires`), for the project's own wheel
# Both are resolved for the image's Python (3.11, the Dockerfile's base) on every platform (`--universal`). A pin
# already in a lock is kept while pyproject.toml still allows it; UPGRADE=1 moves every pin to the newest allowed.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
UV_VERSION=0.13.9
PYTHON_VERSION=3.11
upgrade=()
[[ ${UPGRADE:-} == 1 ]] && upgrade=(--upgrade)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m venv "$tmp/venv"
"$tmp/venv/bin/python" -m pip install --quiet --disable-pip-version-check "uv==$UV_VERSION"
compile() {  # compile DIR OUTPUT INPUT: uv's pip compile in DIR, every platform's hashes, `make lock` in the header
  (cd "$1" && "$tmp/venv/bin/uv" --quiet pip compile "$3" --output-file "$here/$2" --universal \
    --python-version "$PYTHON_VERSION" --generate-hashes --custom-compile-command "make lock" "${upgrade[@]}")
}
echo "lock: requirements.lock (pyproject.toml's runtime dependencies)"
compile "$here" requirements.lock pyproject.toml
echo "lock: build-requirements.lock (pyproject.toml's build-system requires)"
python3 -c 'import sys, tomllib; print("\n".join(tomllib.load(open(sys.argv[1], "rb"))["build-system"]["requires"]))' \
  "$here/pyproject.toml" > "$tmp/build-system.requires"  # named so in the lock's `# via`
compile "$tmp" build-requirements.lock build-system.requires
