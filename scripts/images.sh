# Sourced by compose.sh and release.sh: the `images:` stanza of a kustomization that sets the functions' image, as
# `kustomize edit set image` would write it. knative/base names the image ghcr.io/crefn/cre-functions (its own
# `images:`); IMAGE replaces it: registry/name:tag, registry/name@sha256:<64 hex digits>, or registry/name alone.
SHIPPED_IMAGE=ghcr.io/crefn/cre-functions

# image_problem IMAGE: what is wrong with IMAGE as a reference, on one line; nothing when it is usable.
image_problem() {
  local image=$1 name=${1%%@*}
  if [[ $image == *@* && ! ${image#*@} =~ ^sha256:[0-9a-f]{64}$ ]]; then
    echo "the digest of $image is not sha256: and 64 lower-case hex digits"
  elif [[ -z $name || $name == *[[:space:]]* || $name == */ || $name == /* ]]; then
    echo "$image is not an image reference (registry/name:tag or registry/name@sha256:...)"
  fi
}

# images_stanza IMAGE: the stanza, on stdout (nothing for an empty IMAGE).
images_stanza() {
  local image=$1
  [[ -n $image ]] || return 0
  echo "images:"
  echo "  - name: $SHIPPED_IMAGE"
  if [[ $image == *@* ]]; then
    echo "    newName: ${image%%@*}"
    echo "    digest: ${image#*@}"
  elif [[ ${image##*/} == *:* ]]; then
    echo "    newName: ${image%:*}"
    echo "    newTag: \"${image##*:}\""
  else
    echo "    newName: $image"
  fi
}
