#!/usr/bin/env bash
# Build the Streams images without any image registry:
#
#   streams-base:<key>            Debian bookworm (minbase) + a Java 17 runtime + Python 3,
#                                 a root filesystem made by debootstrap and `docker import`ed
#   streams-kafka:<kafka version> the base + the same Kafka jars the local broker runs
#                                 (`streams.broker.ensure_libs()`) + an entrypoint
#   streams-app:<streams version> (with --app) the base + a virtualenv with this project,
#                                 to run a topology from topology/ (compose/Dockerfile);
#                                 the project's wheel from wheel.sh, which caches it
#
# Cached at every step, so a second run with nothing changed takes a second or two:
# - the rootfs tarball lives in $STREAMS_CACHE_DIR/rootfs/ (default ~/.cache/streams), named
#   by a hash of what goes into it; debootstrap runs only when it is missing;
# - each image carries a `streams.content-hash` label; it is rebuilt only when the hash of
#   its inputs (base image id, jars, entrypoint, Dockerfile) differs.
#
# Needs: root (debootstrap), a running Docker daemon (.ci/docker.sh starts one), and the
# project's virtualenv (PYTHON, default .venv/bin/python) for the Kafka jars.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
CACHE="${STREAMS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/streams}"
SUITE=bookworm
PACKAGES=openjdk-17-jre-headless,python3,python3-venv
# debootstrap fetches from the same mirror apt is configured with (no other host is
# reachable on CI machines); override with DEBIAN_MIRROR.
MIRROR="${DEBIAN_MIRROR:-}"
BUILD_APP=0
[[ "${1:-}" == "--app" ]] && BUILD_APP=1

say() { printf 'image: %s\n' "$*" >&2; }
die() { printf 'image: error: %s\n' "$*" >&2; exit 1; }

sha() { sha256sum | cut -c1-16; }

label_of() { # image label -> value, empty when the image or label is missing
  docker image inspect --format "{{ index .Config.Labels \"$2\" }}" "$1" 2>/dev/null || true
}

apt_mirror() {
  local uri
  uri="$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' \
         | grep -v -- '-security' | head -1 || true)"
  if [[ -z "$uri" ]]; then
    uri="$(grep -hs '^deb ' /etc/apt/sources.list | awk '{print $2}' | grep -v -- '-security' \
           | head -1 || true)"
  fi
  echo "${uri:-http://deb.debian.org/debian}"
}

# -- base: a Debian root filesystem with Java and Python ------------------------------------

base_image() {
  local key tarball tag
  key="$(printf '%s %s v2' "$SUITE" "$PACKAGES" | sha)"
  tag="streams-base:$key"
  tarball="$CACHE/rootfs/$SUITE-$key.tar"
  if docker image inspect "$tag" >/dev/null 2>&1; then
    echo "$tag"; return
  fi
  if [[ ! -f "$tarball" ]]; then
    command -v debootstrap >/dev/null || die "debootstrap is missing (apt-get install debootstrap)"
    [[ "$(id -u)" == 0 ]] || die "debootstrap needs root; run as root or build on a CI machine"
    [[ -n "$MIRROR" ]] || MIRROR="$(apt_mirror)"
    mkdir -p "$CACHE/rootfs"
    local tree="$CACHE/rootfs/tree-$key.tmp"
    rm -rf "$tree"
    say "debootstrap $SUITE ($PACKAGES) from $MIRROR (about 30-60 s)"
    debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$tree" "$MIRROR" \
      >"$CACHE/rootfs/debootstrap.log" 2>&1 \
      || die "debootstrap failed; see $CACHE/rootfs/debootstrap.log"
    # Smaller tree, faster containers: vfs copies the whole tree for every container.
    rm -rf "$tree"/var/cache/apt/archives/*.deb "$tree"/var/lib/apt/lists/* \
           "$tree"/usr/share/doc/* "$tree"/usr/share/man/* "$tree"/usr/share/locale/* \
           "$tree"/usr/share/info/*
    tar -C "$tree" --numeric-owner -cf "$tarball.tmp" .
    mv "$tarball.tmp" "$tarball"
    rm -rf "$tree"
  fi
  say "importing $tarball as $tag"
  docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change "LABEL streams.base=$key" \
    "$tarball" "$tag" >/dev/null
  echo "$tag"
}

# -- an image from a Dockerfile, rebuilt only when its inputs changed -----------------------

build_cached() { # tag context dockerfile base hash
  local tag="$1" context="$2" dockerfile="$3" base="$4" hash="$5"
  if [[ "$(label_of "$tag" streams.content-hash)" == "$hash" ]]; then
    say "$tag is up to date"
    return
  fi
  say "building $tag"
  local previous
  previous="$(docker image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)"
  # The classic builder: BuildKit (buildx) is not part of Debian's docker.io. Its
  # deprecation notice is noise, so output is shown only when the build fails.
  DOCKER_BUILDKIT=0 docker build -f "$dockerfile" --build-arg "BASE=$base" \
    --label "streams.content-hash=$hash" -t "$tag" "$context" >"$CACHE/image-build.log" 2>&1 \
    || { tail -30 "$CACHE/image-build.log" >&2; die "building $tag failed"; }
  # The image this one replaces is untagged now; on vfs it would keep ~0.5 GB of disk.
  [[ -n "$previous" ]] && docker image rm "$previous" >/dev/null 2>&1 || true
  say "built $tag"
}

kafka_image() {
  local base="$1" version libs context hash
  version="$("$PYTHON" -c 'from streams.broker import KAFKA_VERSION; print(KAFKA_VERSION)')"
  libs="$("$PYTHON" -c 'from streams.broker import ensure_libs; print(ensure_libs())')"
  context="$CACHE/image-context/kafka-$version"
  rm -rf "$context"
  mkdir -p "$context/opt/kafka/bin" "$context/opt/kafka/config"
  # Hard links: no copy of the jars, and docker build reads them as regular files.
  cp -al "$libs" "$context/opt/kafka/libs" 2>/dev/null || cp -a "$libs" "$context/opt/kafka/libs"
  rm -f "$context/opt/kafka/libs/.complete"
  install -m 0755 "$HERE/kafka-run.sh" "$context/opt/kafka/bin/streams-kafka-run"
  install -m 0644 "$HERE/log4j2.xml" "$context/opt/kafka/config/log4j2.xml"
  hash="$( { docker image inspect --format '{{.Id}}' "$base"; echo "$version";
             cat "$HERE/Dockerfile.kafka";
             (cd "$context" && find . -type f -print0 | sort -z | xargs -0 sha256sum); } | sha)"
  build_cached "streams-kafka:$version" "$context" "$HERE/Dockerfile.kafka" "$base" "$hash"
  rm -rf "$context"
  echo "streams-kafka:$version"
}

app_image() {
  local base="$1" version context hash tag wheel
  version="$("$PYTHON" -c 'import streams; print(streams.__version__)')"
  tag="streams-app:$version"
  # The wheel's key covers the sources (topology/ and schemas/ too), so an unchanged tree
  # skips the wheel and the image build altogether.
  hash="$( { docker image inspect --format '{{.Id}}' "$base";
             PYTHON="$PYTHON" bash "$HERE/wheel.sh" --key;
             cd "$ROOT" && sha256sum compose/Dockerfile compose/run-topology.sh; } | sha)"
  if [[ "$(label_of "$tag" streams.content-hash)" == "$hash" ]]; then
    say "$tag is up to date"
    return
  fi
  # The project's wheel as the wheel test has it (one build for both, cached by its key).
  wheel="$(PYTHON="$PYTHON" bash "$HERE/wheel.sh")"
  context="$CACHE/image-context/app"
  rm -rf "$context"
  mkdir -p "$context/wheels"
  # The dependencies' wheels are fetched here, where PyPI is reachable (pip's cache serves
  # them); the image build then needs no network. With the extra `metrics`: the stack's
  # topology serves /metrics (compose.yaml).
  say "fetching the dependencies' wheels for $tag"
  "$PYTHON" -m pip wheel --quiet --wheel-dir "$context/wheels" "$wheel[metrics]" >&2
  mkdir -p "$context/app"
  cp -a "$ROOT/topology" "$ROOT/schemas" "$context/app/"
  find "$context" -name __pycache__ -type d -prune -exec rm -rf {} +
  install -m 0755 "$ROOT/compose/run-topology.sh" "$context/app/run-topology.sh"
  build_cached "$tag" "$context" "$ROOT/compose/Dockerfile" "$base" "$hash"
  rm -rf "$context"
}

docker info >/dev/null 2>&1 || die "no Docker daemon answers (start one: bash .ci/docker.sh)"
BASE="$(base_image)"
kafka_image "$BASE" >/dev/null
[[ "$BUILD_APP" == 1 ]] && app_image "$BASE"
exit 0
