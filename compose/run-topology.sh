#!/bin/sh
# The compose `topology` service: create the input topic when it is missing (topologies
# only create the topics they own), then run the topology until the container stops.
#   STREAMS_TOPOLOGY   file name in topology/ without .py (default orders)
#   STREAMS_APP_ID     the app id (default: the topology's name)
#   STREAMS_INPUT      the input topic (default orders), STREAMS_INPUT_PARTITIONS (3)
set -eu
topology="${STREAMS_TOPOLOGY:-orders}"
input="${STREAMS_INPUT:-orders}"
python - "$input" "${STREAMS_INPUT_PARTITIONS:-3}" <<'PY'
import os, sys
from streams.cluster import admin_client, create_topic
admin = admin_client(os.environ["KAFKA_BOOTSTRAP_SERVERS"])
create_topic(admin, sys.argv[1], partitions=int(sys.argv[2]), exist_ok=True)
PY
exec streams run "topology/$topology.py" --app-id "${STREAMS_APP_ID:-$topology}" \
  --set "input=$input" --no-status
