"""Running a topology: its description compiled into plain callables, one per node.

``plan`` compiles a ``Topology`` into a ``Plan`` (entries by input topic, sinks that write
through ``emit``); each operator is a module of its own with a ``build_<kind>`` function
the plan calls once per node: ``stateless`` (map, filter, flat_map, peek, rekey, branch),
``dedup``, ``process``, ``aggregate`` (and ``sliding``), ``joins`` (table steps, joins
with tables), ``window_join``, ``replier``. What they share: ``calls`` (the ``Run`` and
``Emit`` shapes), ``checks`` (a record's key, a function's output), ``context`` (what a
processor sees), ``async_steps`` (awaiting ``async def`` steps), ``schedule`` (timers),
``step_timer`` (per-step time), ``store_layout`` (windowed stores' keys) and ``reads``
(a table's store read from outside its step).

Execution imports the description (``streams.topology``), never the reverse
(``tests/unit/repository/test_topology_layers.py``).
"""
