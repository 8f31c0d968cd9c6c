"""The throughput job as a Quix Streams app, run by section ``peers`` in its own virtualenv.

``python quix_job.py SPEC``, SPEC a JSON object: bootstrap, source, target, group,
state_dir, placed and enriched (the payload schemas as JSON), tiers (a customer id's
last character to its tier) and limits (a tier to its credit limit), producer (settings
for the app's producer: the runtime's). The app reads plain Avro ``order.placed`` v2
payloads, drops an order whose id its RocksDB state has seen (Quix state is scoped to
the message key, the customer: an order and its copy share it), adds the tier and limit
and writes Avro ``order.enriched`` v1, at-least-once with changelog topics, as
``streams run topology/enrich.py`` does. It runs until SIGTERM.

Only the standard library and ``quixstreams`` here: this file runs where Streams is not
installed (Quix pins its own confluent-kafka and rocksdict).
"""

from __future__ import annotations

import json
import sys
from typing import Any


def main() -> None:
    from quixstreams import Application  # noqa: PLC0415 - only in the peers' virtualenv
    from quixstreams.models.serializers.avro import (  # noqa: PLC0415
        AvroDeserializer,
        AvroSerializer,
    )

    spec = json.loads(sys.argv[1])
    tiers: dict[str, str] = spec["tiers"]
    limits: dict[str, int] = spec["limits"]
    app = Application(
        broker_address=spec["bootstrap"],
        consumer_group=spec["group"],
        auto_offset_reset="earliest",
        state_dir=spec["state_dir"],
        processing_guarantee="at-least-once",
        commit_interval=1.0,
        producer_extra_config=spec["producer"],
        loglevel="WARNING",
    )
    source = app.topic(
        spec["source"],
        key_deserializer="bytes",
        value_deserializer=AvroDeserializer(spec["placed"]),
    )
    target = app.topic(
        spec["target"], key_serializer="bytes", value_serializer=AvroSerializer(spec["enriched"])
    )

    def first(order: dict[str, Any], state: Any) -> bool:
        order_id = order["order_id"]
        if state.get(order_id) is not None:
            return False
        state.set(order_id, 1)
        return True

    def enrich(order: dict[str, Any]) -> dict[str, Any]:
        tier = tiers[order["customer_id"][-1:]]
        return {**order, "tier": tier, "limit_cents": limits[tier]}

    sdf = app.dataframe(source)
    sdf = sdf.filter(first, stateful=True).apply(enrich)
    sdf.to_topic(target)
    app.run()


if __name__ == "__main__":
    main()
