#!/usr/bin/env bash
# Install the Debian packages the test suite and the local stack run: etcd (etcd-server), openssl,
# Prometheus Alertmanager (prometheus-alertmanager) and Prometheus with promtool (prometheus; the
# packages' services are not started here), and wrk, the load generator of `make bench`.
set -euo pipefail
missing=()
command -v etcd >/dev/null 2>&1 || [[ -n "${ETCD:-}" ]] || missing+=(etcd-server)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
command -v prometheus-alertmanager >/dev/null 2>&1 || [[ -n "${ALERTMANAGER:-}" ]] || missing+=(prometheus-alertmanager)
{ command -v prometheus >/dev/null 2>&1 || [[ -n "${PROMETHEUS:-}" ]]; } \
  && { command -v promtool >/dev/null 2>&1 || [[ -n "${PROMTOOL:-}" ]]; } || missing+=(prometheus)
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
[[ ${#missing[@]} -eq 0 ]] && exit 0
SUDO=""; [[ $(id -u) -eq 0 ]] || SUDO="sudo"
echo "[deps] installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >&2
$SUDO apt-get install -y -qq "${missing[@]}" >&2
