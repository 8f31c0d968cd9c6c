"""Test kit for users' suites: a real broker per session, unique topics, helpers that wait.

Installed with the package as a pytest plugin (entry point ``pytest11``), so its fixtures
are available in any project that depends on Streams (``--kafka {external,container,local}``
picks the broker):

- ``kafka_bootstrap`` (session): bootstrap address of a real broker.
- ``kafka_cluster`` (session): a local three-node cluster (``LocalCluster``) of its own,
  for tests that kill, stop or pause nodes.
- ``kafka_admin``: an AdminClient for it.
- ``make_topic``: create a uniquely named topic, deleted after the test.
- ``app_id``: a unique app id; the topics the app made (``<app_id>-...``) are deleted after.
- ``kafka_io``: ``KafkaIO`` on that broker: produce envelopes, wait for records.
- ``kafka_container`` (session), ``make_kafka_container``, ``docker_network``: Kafka in
  Docker (``KafkaContainer``), removed after use. They need the ``testing`` extra
  (``pip install 'streams[testing]'``) and a Docker daemon; without either they skip,
  saying why (on CI they fail). Everything else here works without the extra.
- ``run_topology``: ``streams run <file>`` in the background for the test's duration.

The same helpers work without pytest: ``KafkaContainer``, ``LocalCluster``, ``produce_envelopes``,
``wait_for_records``, ``wait_until``.

``TestDriver`` runs a topology in memory (no broker) for unit tests; ``window_oracle``
says what a windowed aggregation should produce, computed the plain way.
``TopologyProcess`` runs ``streams run`` in a child process, and
``faust_worker.FaustWorkerProcess`` a Faust app's worker (with the ``faust`` extra).
"""

from typing import TYPE_CHECKING

from streams.broker import LocalCluster
from streams.errors import ProduceError
from streams.testing.docker_daemon import (
    LOCAL_IMAGE,
    OFFICIAL_IMAGE,
    ContainerError,
    default_image,
    docker_unavailable_reason,
)
from streams.testing.driver import OutputRecord, TestDriver
from streams.testing.kafka_io import KafkaIO
from streams.testing.produce import (
    produce_envelopes,
    produce_records,
    wait_for_envelopes,
)
from streams.testing.topics import TopicFactory, unique_topic_name
from streams.testing.topology_process import TopologyProcess, TopologyProcessError
from streams.testing.wait import (
    TopicReader,
    WaitTimeoutError,
    caught_up,
    describe_record,
    wait_for,
    wait_for_records,
    wait_until,
)
from streams.testing.windows import WindowOracle, window_oracle

if TYPE_CHECKING:
    from streams.testing.container import KafkaContainer
else:
    # KafkaContainer needs the testing extra (testcontainers, docker): imported on first
    # use, so the rest of the kit, and the pytest plugin, load without it.
    from streams._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(__name__, {"streams.testing.container": ["KafkaContainer"]})

__all__ = [
    "LOCAL_IMAGE",
    "OFFICIAL_IMAGE",
    "ContainerError",
    "KafkaContainer",
    "KafkaIO",
    "LocalCluster",
    "OutputRecord",
    "ProduceError",
    "TestDriver",
    "TopicFactory",
    "TopicReader",
    "TopologyProcess",
    "TopologyProcessError",
    "WaitTimeoutError",
    "WindowOracle",
    "caught_up",
    "default_image",
    "describe_record",
    "docker_unavailable_reason",
    "produce_envelopes",
    "produce_records",
    "unique_topic_name",
    "wait_for",
    "wait_for_envelopes",
    "wait_for_records",
    "wait_until",
    "window_oracle",
]
