#!/usr/bin/env bash
# Docker for the container tests, on a fresh CI machine (Debian bookworm, root or sudo):
#   1. install Debian's docker.io, debootstrap and docker-compose when missing;
#   2. start `dockerd --storage-driver=vfs` in the background when no daemon answers
#      (vfs: works inside any container or VM, no kernel overlay support needed);
#   3. build the Kafka image locally (`make image`: no registry is reachable on CI).
# Idempotent: on a machine where all that is done it takes a second or two.
#
# The test run that follows needs (exported by .ci/run):
#   CI=true (or STREAMS_REQUIRE_DOCKER=1)   container tests fail instead of skipping
#   TESTCONTAINERS_RYUK_DISABLED=true       Ryuk's image cannot be pulled (without this,
#                                           KafkaContainer tries once, then runs without
#                                           it); our fixtures remove their own containers
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

LOG="${STREAMS_DOCKERD_LOG:-/tmp/streams-dockerd.log}"
SUDO=""
[[ "$(id -u)" == 0 ]] || SUDO="sudo"

say() { printf 'docker.sh: %s\n' "$*"; }

# -- 1. packages ------------------------------------------------------------------------------
missing=()
command -v dockerd >/dev/null || missing+=(docker.io)
command -v debootstrap >/dev/null || missing+=(debootstrap)
if ! docker compose version >/dev/null 2>&1 && ! command -v docker-compose >/dev/null; then
  missing+=(docker-compose)  # Debian has no compose plugin package; compose v1 validates too
fi
if ((${#missing[@]})); then
  say "installing ${missing[*]}"
  $SUDO apt-get update -q >/dev/null
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
fi

# -- 2. the daemon ----------------------------------------------------------------------------
if ! docker info >/dev/null 2>&1; then
  say "starting dockerd (storage driver vfs), log in $LOG"
  # setsid: the daemon outlives this script and the CI step's process group.
  $SUDO setsid nohup dockerd --storage-driver=vfs >"$LOG" 2>&1 </dev/null &
  for _ in $(seq 1 120); do
    docker info >/dev/null 2>&1 && break
    sleep 0.5
  done
  if ! docker info >/dev/null 2>&1; then
    say "dockerd did not answer within 60 s; last lines of $LOG:"
    tail -30 "$LOG" >&2 || true
    exit 1
  fi
fi
say "Docker $(docker version --format '{{.Server.Version}}') is up"

# -- 3. the image -----------------------------------------------------------------------------
make --no-print-directory image
