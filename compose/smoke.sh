#!/usr/bin/env bash
# End-to-end check of the compose stack on the locally built images, no registry needed:
# `stack.sh up` on a free port, an order written from the host, the topology's accepted
# output read back, `stack.sh down`. It is tests/container/test_compose_stack.py (which
# `make test` runs too); about a minute once the images are built.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
STREAMS_REQUIRE_DOCKER=1 exec .venv/bin/pytest -q -p no:cacheprovider \
  tests/container/test_compose_stack.py "$@"
