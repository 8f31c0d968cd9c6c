"""The record path: one chain of steps, run by the runtime and by the TestDriver alike.

The chain, its order and which steps are optional: ``chain``. One line per module:

- ``record``: ``Record``, a consumed message, built once, read by every step.
- ``step``: the ``Step`` contract (submit, poll, revoked, join, close) and ``Forward``.
- ``chain``: ``build_chain``, the steps a topology needs, in order, and ``Chain``.
- ``time_order``: ``TimeOrder``, a stream and the table it joins read in event-time order.
- ``retry_gate``: ``RetryGate``, retry records held until due (seek and pause, no sleep).
- ``concurrency``: ``Concurrently``, records in flight at once while async steps await.
- ``offsets``: ``Partitions`` (the assigned partitions, each one's position and commit,
  ``rewind_to_committed``) and ``Track``.
- ``pauses``: ``Pauses``, a partition paused while any step wants it, and ``HeldBound``.
- ``failure``: the failure policy, ``StopSkipOrDeadLetter`` or ``RetryOrDeadLetter``.
- ``execute``: ``Attempt``, decode and run the plan atomically (outputs kept, store
  writes rolled back on failure).
- ``traced``: ``TracedAttempt``, the attempt inside a span when tracing is on.
- ``decode``: ``Decode``, the one decoder per input topic, chosen at build time.
- ``crash_guard``: a record that kills the process again and again is dead-lettered.
- ``produce``: ``OutputSink`` (writes and their acknowledgements) and ``Produce``.
- ``timers``: ``Timers``, what processors scheduled, run per owned partition.
- ``commit``: the ``Committer`` contract and ``Commit``, the last step.
- ``share``: the failure policy and acknowledgements of a share group's records.
- ``errors``: what stops a run, and which client errors are an outage.
- ``stats``: the counters the steps keep.

Nothing here constructs a Kafka client: the runtime (``streams.runtime``) injects
confluent-kafka ones, the test driver (``streams.testing``) in-memory ones.
"""
