"""The unit suite: no broker, no Docker, no network beyond 127.0.0.1. Each test runs on
in-memory clients (the TestDriver, ``streams.testing.memory``), on files in ``tmp_path``,
or, where the test is about a process (imports, extras, a child pytest), in a child
interpreter.

Its layout mirrors ``streams/``: the tests of ``streams/<package>/<module>.py`` are in
``tests/unit/<package>/`` (``codec/test_wire.py`` for ``streams/codec/wire.py``); those of
a top-level module ``streams/<module>.py`` are at this folder's top
(``test_envelope.py``); the tests of the TestDriver are ``testing/test_driver*.py``, of
the example topologies ``examples/``. Tests about the repository as a whole (layers,
imports, optional extras, docs and README links, the container suite without Docker) are
in ``repository/``.

Every folder here is a package (an ``__init__.py``), so two folders may hold test modules
of the same name (``codec/test_speedups.py``, ``test_speedups.py``) and a module imports
another's helpers by its full name (``from tests.unit.failures.test_model import ...``).
The shared factories are ``tests/factories.py`` (``from factories import order``).
"""
