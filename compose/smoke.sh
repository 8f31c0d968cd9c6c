#!/usr/bin/env bash
# End-to-end check of the compose stack with the locally built images (no registry):
# bring it up, write three valid orders to `orders` from the host, wait until the
# topology has accepted all three, and take the stack down again (also on failure).
# About 1 minute once the images are built; the first app image build takes 2-3 more.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export KAFKA_PORT="${KAFKA_PORT:-29092}"
export STREAMS_KAFKA_IMAGE="${STREAMS_KAFKA_IMAGE:-streams-kafka:$(.venv/bin/python -c \
  'from streams.broker import KAFKA_VERSION; print(KAFKA_VERSION)')}"
export COMPOSE_PROJECT_NAME="${COMPOSE_PROJECT_NAME:-streams-smoke}"

trap 'bash compose/stack.sh down >/dev/null 2>&1 || true' EXIT
bash compose/stack.sh up
.venv/bin/python - <<'PY'
import os
import sys

sys.path.insert(0, ".")
from streams.codec import AvroCodec
from streams.schemas.catalog import SchemaCatalog
from streams.testing import KafkaIO, wait_until
from streams.admin import admin_client
from topology.orders import enrich, is_valid, sample_orders, validate

bootstrap = f"localhost:{os.environ['KAFKA_PORT']}"
# The topology service creates `orders` when it starts: wait for it, not for a while.
wait_until(
    lambda: "orders" in admin_client(bootstrap).list_topics(timeout=10).topics,
    timeout=120,
    what="the input topic `orders`",
)
io = KafkaIO(bootstrap, AvroCodec(SchemaCatalog.load("schemas")))
orders = [o for o in sample_orders(20, seed=11) if is_valid(enrich(validate(o)))][:3]
io.produce("orders", orders)
ids = {o.id for o in orders}
got = io.wait_for_envelopes("orders-accepted", 3, timeout=120, match=lambda e: e.causation_id in ids)
print("smoke: the compose topology accepted", ", ".join(e.data["order_id"] for e in got))
PY
