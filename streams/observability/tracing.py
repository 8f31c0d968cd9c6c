"""Trace context through every hop: whether tracing is on, decided once per build.

W3C trace context (``traceparent``, ``tracestate`` headers) flows with each record:

- the runtime (and the ``TestDriver``, which runs the same chain) starts one span per
  processing attempt, a child of the context in the record's headers (a CONSUMER span
  named ``process <topic>``, current while the steps run, so a step's own spans nest
  under it); every output of the attempt carries the attempt's context;
- a record sent to a retry tier carries the context of the attempt that failed, so the
  retry attempt is its child: one trace from the producer to the final output;
- a dead letter keeps the headers it was read with, ``traceparent`` included, and
  ``streams dlq replay`` sends it back as a child of that context (a PRODUCER span
  ``dlq replay <topic>``): the replayed record continues the same trace;
- ``streams replay`` copies start a new trace each (a PRODUCER span ``replay <topic>``)
  with a span *link* to the original record's context.

Spans go through the global tracer provider (``opentelemetry.trace.get_tracer("streams")``),
so the application's SDK setup (exporter, sampler, resource) applies. Tracing is on only
when the ``otel`` extra (``opentelemetry-api``) is installed *and* an SDK tracer provider
is set when the runtime or tool is built (``opentelemetry-instrument``, or the SDK set up
at the top of the topology file). Otherwise the record path has no tracing step at all:
no header is read (reading a consumed record's headers costs microseconds, see
``streams.codec.avro``), and records keep the trace headers they came with untouched.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from streams.observability.otel import Tracing


def tracing() -> Tracing | None:
    """The tracing of this process, or None when it is off (see the module docstring).
    Call it once when building; a provider set later is not seen by what was built."""
    try:
        import opentelemetry.trace  # noqa: F401, PLC0415 - the otel extra is optional
    except ImportError:
        return None
    from streams.observability.otel import Tracing  # noqa: PLC0415 - needs the extra

    return Tracing.configured()
