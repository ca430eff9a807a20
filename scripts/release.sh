#!/usr/bin/env bash
# Writes the release bundle `make release` makes: DIST/cre-functions-<version>/ (DIST: ./dist) with
#   <install>.yaml   each documented install (a folder of knative/installs/), rendered by `kubectl kustomize` over a
#                    copy of knative/ with the functions' image set to IMAGE (as `kustomize edit set image` sets it)
#   cre-functions.json  the Grafana dashboard (knative/components/monitoring/dashboards/)
#   CHANGELOG.md     the CHANGELOG section of the version
#   SHA256SUMS       of every other file (`sha256sum -c SHA256SUMS` in that folder checks them)
# Environment, all optional: VERSION (must be pyproject.toml's, which is the default), IMAGE (registry/name:tag or
# registry/name@sha256:<digest>; default ghcr.io/crefn/cre-functions:<version>), DIST, KUBECTL (default kubectl).
# A refusal is one line on stderr and exit code 2; the folder is replaced only once every file of it is written.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
source "$here/scripts/images.sh"  # images_stanza, image_problem, SHIPPED_IMAGE
kubectl=${KUBECTL:-kubectl}
export LC_ALL=C  # the files listed, and so SHA256SUMS, in the same order everywhere
refuse() { echo "release: $*" >&2; exit 2; }

released=$(python3 -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb"))["project"]["version"])' \
  "$here/pyproject.toml") || refuse "cannot read the version of pyproject.toml"
version=${VERSION:-$released}
[[ $version == "$released" ]] || refuse "VERSION $version is not pyproject.toml's version $released: bump pyproject.toml first"
notes=$(awk -v head="## $version" '$0 == head || index($0, head " ") == 1 {on = 1; print; next}
                                   on && /^## / {exit} on {print}' "$here/CHANGELOG.md" 2>/dev/null) || true
[[ -n $notes ]] || refuse "CHANGELOG.md has no section \"## $version\": write what changed first"
image=${IMAGE:-$SHIPPED_IMAGE:$version}
problem=$(image_problem "$image")
[[ -z $problem ]] || refuse "$problem"
[[ $image == *@* || ${image##*/} == *:* ]] || refuse "IMAGE $image has neither a tag nor a digest: a release names one"
command -v "$kubectl" >/dev/null || refuse "no $kubectl to render with (KUBECTL=path/to/kubectl)"
dist=${DIST:-$here/dist}
bundle=$dist/cre-functions-$version

mkdir -p "$dist"
work=$(mktemp -d "$dist/.cre-functions-$version.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp -R "$here/knative" "$work/knative"
mkdir "$work/out"
installs=0
for folder in "$here"/knative/installs/*; do  # in the order of their names
  [[ -f $folder/kustomization.yaml ]] || continue
  name=$(basename "$folder")
  echo "release: rendering $name.yaml (knative/installs/$name, image $image)"
  mkdir "$work/$name"
  {
    echo "apiVersion: kustomize.config.k8s.io/v1beta1"
    echo "kind: Kustomization"
    echo "resources:"
    echo "  - ../knative/installs/$name"
    images_stanza "$image"
  } > "$work/$name/kustomization.yaml"
  {
    echo "# cre-functions $version, install $name (knative/installs/$name), image $image"
    echo "# kubectl apply -f $name.yaml; what it holds and how to change it: docs/operating.md"
    "$kubectl" kustomize "$work/$name"
  } > "$work/out/$name.yaml" || refuse "kubectl kustomize knative/installs/$name failed"
  installs=$((installs + 1))
done
cp "$here"/knative/components/monitoring/dashboards/*.json "$work/out/"
printf '%s\n' "$notes" > "$work/out/CHANGELOG.md"
if command -v sha256sum >/dev/null; then sum=(sha256sum); else sum=(shasum -a 256); fi
(cd "$work/out" && "${sum[@]}" -- * > "$work/SHA256SUMS") && mv "$work/SHA256SUMS" "$work/out/SHA256SUMS"
rm -rf "$bundle"
mv "$work/out" "$bundle"
echo "release: wrote $bundle: $installs installs, the dashboard, CHANGELOG.md, SHA256SUMS"
