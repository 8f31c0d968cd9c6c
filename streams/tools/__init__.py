"""Tools for a shell: manage topics, write envelopes from JSON lines, read them back.

The commands ``streams topics``, ``streams produce`` and ``streams consume`` are thin
layers over these modules. Each is a tool, not a hot path: clear errors come first.
"""

# The envelopes' ``source`` when ``streams produce`` and ``streams request`` are told none
# (not ``streams.envelope.DEFAULT_SOURCE``, what a topology's own events start with); here,
# not in ``produce``, so the CLI shows it without loading the codecs.
CLI_SOURCE = "streams-cli"
