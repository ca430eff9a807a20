#!/usr/bin/env bash
# Find or build kube-apiserver for the test suite and the local stack; print its path last.
#
# Order: $KUBE_APISERVER, $KUBEBUILDER_ASSETS/kube-apiserver, the cached build, a fresh build.
# The build uses Debian's `kubernetes` source package (1.20.2, vendor/ included) and Debian's Go.
# apt source entries are derived from this machine's own Debian sources (Types: deb -> deb-src)
# into a private apt state directory, so the system's apt configuration is left untouched.
set -euo pipefail

CACHE_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/cre-functions"
# The suffix names the build recipe: bump it when the steps below change, so caches are rebuilt.
BIN="$CACHE_DIR/kube-apiserver-1.20.2-r2"

say() { printf '[kube-apiserver] %s\n' "$*" >&2; }

if [[ -n "${KUBE_APISERVER:-}" && -x "${KUBE_APISERVER}" ]]; then echo "$KUBE_APISERVER"; exit 0; fi
if [[ -n "${KUBEBUILDER_ASSETS:-}" && -x "${KUBEBUILDER_ASSETS}/kube-apiserver" ]]; then
  echo "$KUBEBUILDER_ASSETS/kube-apiserver"; exit 0
fi
if [[ -x "$BIN" ]]; then echo "$BIN"; exit 0; fi

SUDO=""; [[ $(id -u) -eq 0 ]] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
say "step 1/5: installing build packages (golang-go, reflect2, dpkg-dev)"
$SUDO apt-get update -qq >&2
$SUDO apt-get install -y -qq golang-go golang-github-modern-go-reflect2-dev dpkg-dev rsync >&2

WORK="$CACHE_DIR/build"
rm -rf "$WORK"; mkdir -p "$WORK/apt/sources.list.d" "$WORK/apt/lists/partial" "$WORK/apt/cache/archives/partial" "$WORK/src"

say "step 2/5: deriving deb-src entries from this machine's Debian sources"
found=0
for f in /etc/apt/sources.list.d/*.sources; do
  [[ -f "$f" ]] || continue
  grep -qi 'debian' "$f" || continue
  sed -E 's/^Types:[[:space:]]*deb[[:space:]]*$/Types: deb-src/' "$f" > "$WORK/apt/sources.list.d/$(basename "$f")"
  found=1
done
if [[ -f /etc/apt/sources.list ]] && grep -qE '^deb[[:space:]]' /etc/apt/sources.list; then
  grep -E '^deb[[:space:]]' /etc/apt/sources.list | grep -i debian | sed -E 's/^deb /deb-src /' > "$WORK/apt/sources.list.d/derived.list" || true
  [[ -s "$WORK/apt/sources.list.d/derived.list" ]] && found=1
fi
[[ $found -eq 1 ]] || { say "no Debian apt sources found on this machine"; exit 1; }

APT_OPTS=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$WORK/apt/sources.list.d"
          -o "Dir::State::Lists=$WORK/apt/lists" -o "Dir::Cache=$WORK/apt/cache" -o "APT::Get::List-Cleanup=0")
apt-get "${APT_OPTS[@]}" update -qq >&2

say "step 3/5: downloading and unpacking the kubernetes source package"
(cd "$WORK/src" && apt-get "${APT_OPTS[@]}" source --download-only kubernetes >&2)
dsc=$(ls "$WORK"/src/kubernetes_*.dsc | head -n1)
(cd "$WORK/src" && dpkg-source --no-check -x "$dsc" tree >&2)
TREE="$WORK/src/tree"

say "step 4/5: replacing vendored modern-go/reflect2 with Debian's 1.0.2"
rm -rf "$TREE/vendor/github.com/modern-go/reflect2"
cp -r /usr/share/gocode/src/github.com/modern-go/reflect2 "$TREE/vendor/github.com/modern-go/reflect2"
rm -f "$TREE/vendor/github.com/modern-go/reflect2/go.mod"

# Go >= 1.18 changed reflect.Value's layout, so go-openapi's zero-value test
# (reflect.DeepEqual of two reflect.Values) now holds for "" and CRD validation rejects every empty
# string as "null". Servers built with the Go they were released with never did: keep only the nil test.
say "step 4b/5: patching go-openapi's type validator for Go >= 1.18"
mapfile -t validators < <(grep -rl 'reflect.DeepEqual(reflect.Zero(reflect.TypeOf(data)), reflect.ValueOf(data))' "$TREE/vendor" || true)
[[ ${#validators[@]} -gt 0 ]] || { say "go-openapi type validator not found: the source tree changed"; exit 1; }
for f in "${validators[@]}"; do
  sed -i 's/data == nil || reflect.DeepEqual(reflect.Zero(reflect.TypeOf(data)), reflect.ValueOf(data))/data == nil/' "$f"
  ! grep -q 'reflect.Zero(reflect.TypeOf(data))' "$f" || { say "could not patch $f"; exit 1; }
  say "patched ${f#$TREE/}"
done

say "step 5/5: building cmd/kube-apiserver (about 8 minutes on 2 cores)"
mkdir -p "$WORK/gopath/src/k8s.io"
ln -sfn "$TREE" "$WORK/gopath/src/k8s.io/kubernetes"
start=$(date +%s)
(
  cd "$WORK/gopath/src/k8s.io/kubernetes"
  export GOPATH="$WORK/gopath" GO111MODULE=off CGO_ENABLED=0 GOFLAGS=-mod=vendor GOCACHE="$WORK/gocache"
  unset GOFLAGS
  make WHAT=cmd/kube-apiserver 2>&1 | while IFS= read -r line; do printf '[kube-apiserver] build: %s\n' "$line" >&2; done
)
out=$(find "$TREE/_output" -type f -name kube-apiserver -perm -u+x | head -n1)
[[ -n "$out" ]] || { say "build finished without a kube-apiserver binary"; exit 1; }
cp "$out" "$BIN.tmp" && mv "$BIN.tmp" "$BIN"
say "built in $(( $(date +%s) - start ))s; cleaning the build tree"
rm -rf "$WORK"
echo "$BIN"
