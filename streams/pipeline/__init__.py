"""The record path: one chain of steps, run by the runtime and by the TestDriver alike.

::

    consumer ─▶ Record ─▶ RetryGate ─▶ Track ─▶ failure policy ─▶ Produce ─▶ Commit
                          (retry tiers)   (offsets)  Attempt:        (sink)     (committer)
                                                     decode → plan

- ``record``: ``Record``, built once per consumed message.
- ``step``: the ``Step`` contract (submit, poll, revoked, join, close), ``Forward``.
- ``retry_gate``: ``RetryGate``, retry records held until due (seek and pause, no sleep).
- ``offsets``: ``Partitions`` (the assigned partitions, the one owner of their records in
  flight, ``rewind_to_committed``), ``Track``.
- ``execute``: ``Attempt``, decode and run the plan atomically (outputs kept, store
  writes rolled back on failure).
- ``failure``: the failure policy, ``StopSkipOrDeadLetter`` or ``RetryOrDeadLetter``.
- ``produce``: ``OutputSink`` (writes and their acknowledgements), ``Produce``.
- ``commit``: the ``Committer`` contract and ``Commit``, the last step.
- ``chain``: ``build_chain``, the steps a topology needs, in order.
- ``errors``, ``stats``: what stops a run, and the counters the steps keep.

Nothing here constructs a Kafka client: the runtime (``streams.runtime``) injects
confluent-kafka ones, the test driver (``streams.testing``) in-memory ones.
"""
