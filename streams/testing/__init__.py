"""Test kit for users' suites: a real broker per session, unique topics per test.

Installed with the package as a pytest plugin (entry point ``pytest11``), so its fixtures
are available in any project that depends on Streams:

- ``kafka_bootstrap`` (session): bootstrap address of a real broker.
- ``kafka_admin``: an AdminClient for it.
- ``make_topic``: create a uniquely named topic, deleted after the test.
"""

from streams.testing.topics import TopicFactory, unique_topic_name

__all__ = ["TopicFactory", "unique_topic_name"]
