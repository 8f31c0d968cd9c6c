#!/usr/bin/env bash
# `make up` / `make down`: the compose stack in compose/compose.yaml, project "streams".
#   stack.sh up       build the app image (cached), start everything in the background
#   stack.sh down     stop it and remove its containers and data volume
#   stack.sh config   validate the compose file and print it resolved
#   stack.sh <args>   any other compose command (ps, logs -f topology, ...)
# Uses `docker compose` when the plugin is installed, else Debian's `docker-compose`.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if docker compose version >/dev/null 2>&1; then
  compose=(docker compose)
elif command -v docker-compose >/dev/null; then
  compose=(docker-compose)
else
  echo "stack: neither 'docker compose' nor 'docker-compose' is installed" >&2
  echo "stack: (Debian: apt-get install docker-compose; or bash .ci/docker.sh)" >&2
  exit 1
fi
compose+=(--project-name "${COMPOSE_PROJECT_NAME:-streams}" -f "$HERE/compose.yaml")

# The token the topology's metrics port asks of every request, which Prometheus sends
# (compose.yaml's secret): made once, random, never committed (compose/.secrets/ is in
# .gitignore). The folder is this user's only; the file is readable in the containers,
# whatever user they run as, through its mount.
token="$HERE/.secrets/http-token"
if [[ ! -s "$token" ]]; then
  mkdir -p "$HERE/.secrets"
  chmod 700 "$HERE/.secrets"
  (umask 022 && od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$token")
fi

case "${1:-}" in
  up)
    shift
    bash "$HERE/image/build.sh" --app
    if ! "${compose[@]}" up -d "$@"; then
      if [[ -z "${STREAMS_KAFKA_IMAGE:-}" ]]; then
        echo "stack: the default Kafka image comes from Docker Hub; without a registry run" \
          "STREAMS_KAFKA_IMAGE=streams-kafka:<version> make up (built by make image)" >&2
      fi
      exit 1
    fi
    echo "stack: Kafka on localhost:${KAFKA_PORT:-9092}; logs: bash compose/stack.sh logs -f"
    ;;
  down)
    shift
    "${compose[@]}" --profile ui --profile observability down --volumes --remove-orphans "$@"
    ;;
  config)
    shift
    "${compose[@]}" config "$@"
    ;;
  *)
    "${compose[@]}" "$@"
    ;;
esac
