#!/usr/bin/env bash
# Writes into OUT (a new directory) an install of knative/base plus the components named in COMPONENTS (comma
# separated; see knative/components/), over a copy of knative/ so that no file of the repository is edited; with
# IMAGE (registry/name:tag or registry/name@sha256:...), the functions' image set to it.
#   bash scripts/compose.sh OUT [COMPONENTS] [IMAGE] && kubectl apply -k OUT
# The components are listed in ORDER, whatever order they are given in: a component patches what the ones before it
# added (legacy-group moves namespaced's cluster-wide reads and logprofiles' profiles to CRE's old group; oidc gives the Broker's EventPolicy,
# observe adds its Trigger to it; kafka redirects every Trigger's dead letters, observe's too). legacy-group and observe do not compose (observe's read-only roles name CRE's group).
set -euo pipefail
ORDER="manage-all logprofiles namespaced legacy-group oidc observe monitoring kafka"
out=${1:?usage: compose.sh OUT [COMPONENTS] [IMAGE]}
asked=" ${2//,/ } "
image=${3:-}
here=$(cd "$(dirname "$0")/.." && pwd)
source "$here/scripts/images.sh"  # images_stanza, image_problem

for component in $asked; do
  if [[ " $ORDER " != *" $component "* ]]; then
    echo "compose.sh: no component $component; choose among: $ORDER" >&2
    exit 2
  fi
done
if [[ -n $image ]] && problem=$(image_problem "$image") && [[ -n $problem ]]; then
  echo "compose.sh: $problem" >&2
  exit 2
fi
if [[ $asked == *" legacy-group "* && $asked == *" observe "* ]]; then
  echo "compose.sh: legacy-group and observe do not compose (see docs/operating.md, \"Installs\")" >&2
  exit 2
fi
listed=""
for component in $ORDER; do
  if [[ $asked == *" $component "* ]]; then
    listed+="  - knative/components/$component"$'\n'
  fi
done
mkdir -p "$out"
cp -R "$here/knative" "$out/knative"
{
  echo "apiVersion: kustomize.config.k8s.io/v1beta1"
  echo "kind: Kustomization"
  echo "resources:"
  echo "  - knative/base"
  if [ -n "$listed" ]; then printf 'components:\n%s' "$listed"; else echo "components: []"; fi
  images_stanza "$image"
} > "$out/kustomization.yaml"
