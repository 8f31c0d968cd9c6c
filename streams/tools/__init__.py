"""Tools for a shell: manage topics, write envelopes from JSON lines, read them back.

The commands ``streams topics``, ``streams produce`` and ``streams consume`` are thin
layers over these modules. Each is a tool, not a hot path: clear errors come first.
"""
