"""The tour behind ``make demo`` and ``streams demo``: each finished capability adds a step.

The top layer: it may import anything, and nothing imports it but ``streams.cli``.
``streams.demo.runner.run_demo`` runs the steps in order; each other module is one step, or
what the steps share (``context``, ``running``). Every step prints its numbered line and
raises RuntimeError when what it shows did not happen.
"""
