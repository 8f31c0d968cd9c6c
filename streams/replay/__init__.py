"""Replay history and move consumer groups: positions, plans, copies, resets and lag.

The CLI (``streams replay``, ``streams offsets``, ``streams lag``) is a thin layer over
these functions. Each takes a ``streams.cluster.Cluster``, the door they ask through.
"""

from streams.replay.copy import PartitionResult, ReplayResult, replay
from streams.replay.csvplan import dump_plan, parse_plan, read_plan, write_plan
from streams.replay.errors import (
    ActiveGroupError,
    CopyError,
    PlanFileError,
    PositionError,
    RangeError,
    ReplayError,
    UnknownGroupError,
)
from streams.replay.filters import RecordFilter
from streams.replay.groups import (
    GroupOffsets,
    OffsetChange,
    PartitionOffsets,
    ResetPlan,
    execute_reset,
    group_offsets,
    plan_from_offsets,
    plan_reset,
)
from streams.replay.plan import PartitionRange, ReplayPlan, plan_replay
from streams.replay.positions import (
    PositionSpec,
    TopicSelection,
    parse_position,
    parse_position_spec,
    parse_topic_selection,
)
from streams.replay.resolve import PartitionState, resolve, resolve_range

__all__ = [
    "ActiveGroupError",
    "CopyError",
    "GroupOffsets",
    "OffsetChange",
    "PartitionOffsets",
    "PartitionRange",
    "PartitionResult",
    "PartitionState",
    "PlanFileError",
    "PositionError",
    "PositionSpec",
    "RangeError",
    "RecordFilter",
    "ReplayError",
    "ReplayPlan",
    "ReplayResult",
    "ResetPlan",
    "TopicSelection",
    "UnknownGroupError",
    "dump_plan",
    "execute_reset",
    "group_offsets",
    "parse_plan",
    "parse_position",
    "parse_position_spec",
    "parse_topic_selection",
    "plan_from_offsets",
    "plan_replay",
    "plan_reset",
    "read_plan",
    "replay",
    "resolve",
    "resolve_range",
    "write_plan",
]
