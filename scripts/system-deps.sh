#!/usr/bin/env bash
# Install the Debian packages the test suite and the local stack run: etcd (etcd-server) and openssl.
set -euo pipefail
missing=()
command -v etcd >/dev/null 2>&1 || [[ -n "${ETCD:-}" ]] || missing+=(etcd-server)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
[[ ${#missing[@]} -eq 0 ]] && exit 0
SUDO=""; [[ $(id -u) -eq 0 ]] || SUDO="sudo"
echo "[deps] installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >&2
$SUDO apt-get install -y -qq "${missing[@]}" >&2
