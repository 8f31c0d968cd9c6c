#!/usr/bin/env bash
# The project's wheel, built once for each content of its sources and kept:
#
#   wheel.sh         print the path of the wheel of the tree as it is, built first when the
#                    cache has none: as `make dist` builds it (pip wheel --no-deps, an isolated
#                    build, the record path compiled with Cython), from a copy of the files
#                    that go into it, so the repository's build/ and dist/ stay untouched
#   wheel.sh --key   print only its key, without building
#
# Kept in $STREAMS_CACHE_DIR/wheels/<key>/ (default ~/.cache/streams). The key is a hash of
# the files git tracks or would track under pyproject.toml, setup.py, README.md, streams/,
# topology/ and schemas/ (names and contents, a symlink by its target), of the interpreter
# (a compiled module is for one CPython on one platform) and of STREAMS_PURE_PYTHON. The
# build runs under a lock: callers at the same time (the wheel test and the app image of
# build.sh, on two test workers) wait for one build instead of running two. Wheels whose
# key has not been asked for in a week are removed when a new one is built.
#
# Used by build.sh (the app image) and tests/integration/test_wheel_install.py.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
CACHE="${STREAMS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/streams}/wheels"
INPUTS=(pyproject.toml setup.py README.md streams topology schemas)

say() { printf 'wheel: %s\n' "$*" >&2; }
die() { printf 'wheel: error: %s\n' "$*" >&2; exit 1; }

sources() { # the files that go into the wheel, relative to ROOT, one a line, sorted
  cd "$ROOT"
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z --cached --others --exclude-standard -- "${INPUTS[@]}"
  else # an unpacked archive: everything but what builds and runs leave behind
    find "${INPUTS[@]}" \( -type f -o -type l \) ! -path '*/__pycache__/*' ! -name '*.so' \
      -print0
  fi | sort -z | while IFS= read -r -d '' name; do
    # deleted in the working tree but not yet in git: not part of the wheel
    if [[ -e "$name" || -L "$name" ]]; then printf '%s\n' "$name"; fi
  done
}

key() {
  local name
  {
    "$PYTHON" -c 'import sys, sysconfig; print(sys.implementation.cache_tag, sysconfig.get_platform())'
    echo "pure=${STREAMS_PURE_PYTHON:-}"
    cd "$ROOT"
    # streams/examples/{topology,schemas} are symlinks to folders: hashed by their target
    for name in "${SOURCES[@]}"; do
      if [[ -L "$name" ]]; then printf 'link %s %s\n' "$name" "$(readlink "$name")"; fi
    done
    for name in "${SOURCES[@]}"; do
      if [[ ! -L "$name" ]]; then printf '%s\0' "$name"; fi
    done | xargs -0 -r sha256sum
  } | sha256sum | cut -c1-16
}

wheel_in() { # folder -> the one wheel in it, empty when there is none
  compgen -G "$1/streams-*.whl" | head -1 || true
}

build() { # folder: the wheel built into it
  local folder="$1" work
  work="$(mktemp -d "$CACHE/build.XXXXXX")"
  # shellcheck disable=SC2064 # expanded now: the folder of this build
  trap "rm -rf '$work'" EXIT
  # Only the files of the key, and symlinks as symlinks (the wheel copies their targets).
  (cd "$ROOT" && printf '%s\0' "${SOURCES[@]}" | tar --null -T - -cf -) | tar -xf - -C "$work"
  mkdir -p "$work/out"
  say "building the wheel ${folder##*/} (Cython: a minute or two on two cores)"
  local started=$SECONDS
  # 9>&-: the lock is this script's, not pip's; a pip left running by a killed caller must
  # not keep the next one waiting.
  (cd "$work" && "$PYTHON" -m pip wheel --quiet --no-deps --wheel-dir "$work/out" . 9>&-) >&2 \
    || die "pip wheel failed"
  [[ -n "$(wheel_in "$work/out")" ]] || die "pip wheel made no wheel"
  rm -rf "$folder"
  mv "$work/out" "$folder"
  say "built in $((SECONDS - started)) s"
  find "$CACHE" -mindepth 1 -maxdepth 1 -type d ! -name 'build.*' -mtime +7 \
    -exec rm -rf {} + 2>/dev/null || true
}

# Listed once: the key hashes these files and a build copies them.
mapfile -t SOURCES < <(sources)
KEY="$(key)"
if [[ "${1:-}" == "--key" ]]; then
  echo "$KEY"
  exit 0
fi
FOLDER="$CACHE/$KEY"
WHEEL="$(wheel_in "$FOLDER")"
if [[ -z "$WHEEL" ]]; then
  mkdir -p "$CACHE"
  exec 9>"$CACHE/.lock"
  flock 9
  # Another caller may have built it while this one waited for the lock.
  WHEEL="$(wheel_in "$FOLDER")"
  if [[ -z "$WHEEL" ]]; then
    rm -rf "$CACHE"/build.* # left by a caller killed mid-build: no build runs but this one
    build "$FOLDER"
    WHEEL="$(wheel_in "$FOLDER")"
  fi
  flock -u 9
fi
touch "$FOLDER" # asked for now: kept a week more
echo "$WHEEL"
