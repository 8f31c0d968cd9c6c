"""Reading, summarising and replaying a dead-letter topic (the API behind ``streams dlq``).

- ``letters``: ``DeadLetter`` and ``ReplayMark``, the two kinds of record a DLQ holds, and
  ``DlqContents``, a DLQ as read.
- ``read``: ``read_dlq`` reads a DLQ from its start to the end it had when the call began
  (bounded, no consumer group, nothing committed) into memory: DLQs are meant to stay
  small. ``dlq_depth`` counts its records from the watermarks.
- ``summary``: ``DlqFilter`` (which dead letters a command applies to) and ``summarize``.
- ``show``: ``describe``, one dead letter as a JSON-able view.
- ``replay``: ``plan_dlq_replay`` (pure; leaves out letters replayed already) and
  ``execute_dlq_replay``, which sends the dead letters back to their topics and appends a
  replay mark to the DLQ for each record as soon as it is acknowledged.

These are tools: they build their own clients (settings from ``streams.config``) and find
partitions through ``streams.cluster``. The runtime's failure routing, which writes the
dead letters, is ``streams.failures`` and builds none. A DLQ replay sends dead letters back
to their topics; it is not ``streams.replay``'s offset replay of a topic
(``ReplayPlan``/``plan_replay`` there), hence the ``Dlq`` names.
"""

from streams.dlq.errors import DlqError
from streams.dlq.letters import DeadLetter, DlqContents, ReplayMark, to_dead_letter
from streams.dlq.read import Progress, dlq_depth, read_dlq
from streams.dlq.replay import (
    DlqReplayItem,
    DlqReplayPlan,
    DlqReplayResult,
    execute_dlq_replay,
    plan_dlq_replay,
)
from streams.dlq.show import Decoder, describe
from streams.dlq.summary import DlqFilter, DlqSummary, summarize

__all__ = [
    "DeadLetter",
    "Decoder",
    "DlqContents",
    "DlqError",
    "DlqFilter",
    "DlqReplayItem",
    "DlqReplayPlan",
    "DlqReplayResult",
    "DlqSummary",
    "Progress",
    "ReplayMark",
    "describe",
    "dlq_depth",
    "execute_dlq_replay",
    "plan_dlq_replay",
    "read_dlq",
    "summarize",
    "to_dead_letter",
]
